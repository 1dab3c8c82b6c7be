package testkit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

// helperEnv makes the test binary play one of helpers instead of running
// the tests.
const helperEnv = "TESTKIT_TEST_HELPER"

// helpers are the daemons StartReady is tried with.
var helpers = map[string]func(){
	// ready sends READY=1, then waits for SIGTERM.
	"ready": func() {
		if c, err := net.Dial("unixgram", os.Getenv("NOTIFY_SOCKET")); err == nil {
			c.Write([]byte("READY=1"))
			c.Close()
		}
		select {}
	},
	// exit prints a line and exits 3 at once.
	"exit": func() { fmt.Println("giving up"); os.Exit(3) },
	// mute sends nothing and waits for SIGTERM.
	"mute": func() { select {} },
}

func TestMain(m *testing.M) {
	if play, ok := helpers[os.Getenv(helperEnv)]; ok {
		play()
	}
	goleak.VerifyTestMain(m)
}

// recorder is a testing.TB that records failures instead of failing, to
// test what the helpers report.
type recorder struct {
	testing.TB
	errors Lines
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) { r.errors.Logf(format, args...) }

func (r *recorder) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }

// Fatalf records, then ends the goroutine as testing's does: run the
// helper under fails (below).
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

// fails runs f with a recorder on a goroutine of its own (Fatalf ends it)
// and returns what it recorded.
func fails(t *testing.T, f func(tb testing.TB)) []string {
	t.Helper()
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() { defer close(done); f(r) }()
	<-done
	return r.errors.All()
}

// The waits run in a synctest bubble: its clock moves only when every
// goroutine waits, so the deadlines are exact and cost no wall time.

func TestWithin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		n := 0
		if !Within(time.Second, func() bool { n++; return n == 3 }) {
			t.Fatal("Within: false for a condition true on its third check")
		}
		if n != 3 || time.Since(start) != 2*Poll {
			t.Errorf("checked %d times in %v, want 3 in %v", n, time.Since(start), 2*Poll)
		}
		start = time.Now()
		if Within(50*time.Millisecond, func() bool { return false }) {
			t.Error("Within: true for a condition never true")
		}
		if el := time.Since(start); el <= 50*time.Millisecond || el > 50*time.Millisecond+Poll {
			t.Errorf("gave up after %v, want just past the 50ms deadline", el)
		}
		deadline := time.Now().Add(30 * time.Millisecond)
		if !Within(30*time.Millisecond, func() bool { return time.Now().After(deadline) }) {
			t.Error("Within: false for a condition that holds once the deadline has passed; want it checked once more then")
		}
	})
}

func TestEventually(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := fails(t, func(tb testing.TB) { Eventually(tb, 20*time.Millisecond, "done", func() bool { return false }) })
		if want := []string{"still not done after 20ms"}; !slices.Equal(got, want) {
			t.Errorf("Eventually of a false condition reported %q, want %q", got, want)
		}
		if got := fails(t, func(tb testing.TB) { Eventually(tb, time.Second, "done", func() bool { return true }) }); len(got) > 0 {
			t.Errorf("Eventually of a true condition reported %q, want nothing", got)
		}
		n := 0
		got = fails(t, func(tb testing.TB) {
			EventuallyOK(tb, 20*time.Millisecond, func() error { n++; return fmt.Errorf("check %d: web inactive", n) })
		})
		if want := []string{fmt.Sprintf("after 20ms: check %d: web inactive", n)}; !slices.Equal(got, want) {
			t.Errorf("EventuallyOK reported %q, want %q: the last check's error", got, want)
		}
	})
}

func TestReceive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ch := make(chan error, 1)
		got := fails(t, func(tb testing.TB) { Receive(tb, 20*time.Millisecond, ch, "no result from %s", "web") })
		if want := []string{"no result from web"}; !slices.Equal(got, want) {
			t.Errorf("Receive of a silent channel reported %q, want %q", got, want)
		}
		ch <- errors.New("exit 1")
		var v error
		if got := fails(t, func(tb testing.TB) { v = Receive(tb, time.Second, ch, "no result") }); len(got) > 0 || v == nil || v.Error() != "exit 1" {
			t.Errorf("Receive of a sent value: got %v and reported %q, want exit 1 and nothing", v, got)
		}
	})
}

func TestEventuallyOn(t *testing.T) {
	for _, tt := range []struct {
		name string
		sent int  // values sent on wake
		hold int  // the condition holds once this many have been sent
		shut bool // wake closed after the values
		want string
	}{
		{"holds at once", 0, 0, false, ""},
		{"holds after the second value", 3, 2, false, ""},
		{"never holds", 1, 5, false, "still not there after 50ms"},
		{"holds as wake closes", 2, 2, true, ""},
		{"wake closed", 1, 5, true, "still not there when its notifications ended"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				wake := make(chan int)
				quit := make(chan struct{}) // the wait is over: stop sending
				sent := make(chan struct{})
				var mu sync.Mutex
				got := 0
				go func() {
					defer close(sent)
					for i := range tt.sent {
						mu.Lock()
						got = i + 1
						mu.Unlock()
						select {
						case wake <- i:
						case <-quit:
							return
						}
					}
					if tt.shut {
						close(wake)
					}
				}()
				errs := fails(t, func(tb testing.TB) {
					EventuallyOn(tb, 50*time.Millisecond, "there", wake, func() bool {
						mu.Lock()
						defer mu.Unlock()
						return got >= tt.hold
					})
				})
				close(quit)
				<-sent
				if tt.want == "" && len(errs) > 0 || tt.want != "" && !slices.Equal(errs, []string{tt.want}) {
					t.Errorf("reported %q, want %q", errs, tt.want)
				}
			})
		})
	}
}

func TestWriteUnits(t *testing.T) {
	dir := UnitsDir(t, map[string]string{"web.yaml": "command: [a]\n", "db.yml": "shell: b\n"})
	if filepath.Base(dir) != "units" {
		t.Errorf("UnitsDir: %s, want a directory named units", dir)
	}
	WriteUnits(t, dir, map[string]string{"web.yaml": "command: [c]\n"})
	Perms(t, map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "web.yaml"): 0o600, filepath.Join(dir, "db.yml"): 0o600})
	for name, want := range map[string]string{"web.yaml": "command: [c]\n", "db.yml": "shell: b\n"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s holds %q (%v), want %q", name, b, err, want)
		}
	}
}

func TestPerms(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got := fails(t, func(tb testing.TB) { Perms(tb, map[string]os.FileMode{path: 0o600}) })
	if want := []string{path + ": mode 0644, want 0600"}; !slices.Equal(got, want) {
		t.Errorf("Perms of a 0644 file: %q, want %q", got, want)
	}
	if got := fails(t, func(tb testing.TB) { Perms(tb, map[string]os.FileMode{path: 0o644}) }); len(got) > 0 {
		t.Errorf("Perms of the mode the file has: %q, want nothing", got)
	}
	if got := fails(t, func(tb testing.TB) { Perms(tb, map[string]os.FileMode{filepath.Join(dir, "none"): 0o600}) }); len(got) != 1 {
		t.Errorf("Perms of a missing file: %q, want one failure", got)
	}
}

// helper returns this test binary as the daemon kind.
func helper(kind string) *exec.Cmd { return Self(helperEnv + "=" + kind) }

func TestStartReady(t *testing.T) {
	p, err := StartReady(t.Context(), helper("ready"), 20*time.Second, "")
	if err != nil {
		t.Fatalf("StartReady: %v", err)
	}
	if err := p.Stop(10 * time.Second); err == nil || !strings.Contains(err.Error(), "signal: terminated") {
		t.Errorf("Stop: %v, want the helper ended by SIGTERM", err)
	}

	log := filepath.Join(t.TempDir(), "log")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := helper("exit")
	cmd.Stdout = f
	p, err = StartReady(t.Context(), cmd, 20*time.Second, log)
	if err == nil || !strings.Contains(err.Error(), "exited before READY=1: exit status 3") || !strings.Contains(err.Error(), "giving up") {
		t.Errorf("StartReady of a helper that exits: %v, want its exit and its log", err)
	}
	if p == nil {
		t.Fatal("StartReady returned no process for one that started")
	}
	if err := <-p.Done; err == nil {
		t.Errorf("Done: nil, want the exit status 3 again")
	}

	p, err = StartReady(t.Context(), helper("mute"), 100*time.Millisecond, "")
	if err == nil || !strings.Contains(err.Error(), "no READY=1 within 100ms") {
		t.Errorf("StartReady of a helper that says nothing: %v, want a timeout", err)
	}
	if p != nil {
		if err := p.Stop(10 * time.Second); err == nil {
			t.Errorf("Stop of the mute helper: nil error, want its SIGTERM")
		}
	}
}

func TestWaitFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "web.log")
	written := make(chan error, 1)
	// Before WaitFile's first read or after it: either way it must see it.
	go func() { written <- os.WriteFile(path, []byte("warming up\nready (pid 42)\n"), 0o600) }()
	if err := WaitFile(path, regexp.MustCompile(`(?m)^ready \(pid [0-9]+\)$`), 10*time.Second); err != nil {
		t.Errorf("WaitFile of a line written meanwhile: %v", err)
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	err := WaitFile(path, regexp.MustCompile("listening"), 50*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "ready (pid 42)") {
		t.Errorf("WaitFile of a line never written: %v, want an error quoting the file", err)
	}
	if err := WaitFile(filepath.Join(dir, "none", "x.log"), regexp.MustCompile("x"), time.Second); err == nil {
		t.Errorf("WaitFile in a missing directory: no error")
	}
}

func TestServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := Serve(t, ln, func(c net.Conn) { c.Write([]byte("hi")) })
	for i := range 2 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 8)
		n, _ := c.Read(b)
		c.Close()
		if string(b[:n]) != "hi" {
			t.Errorf("connection %d: got %q, want hi", i, b[:n])
		}
	}
	stop()
	stop() // and once more by the cleanup
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Errorf("a connect after stop succeeded, want the listener closed")
	}
}

func TestRun(t *testing.T) {
	errEnd := fmt.Errorf("ended")
	started := make(chan struct{})
	stop := Run(t, func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		return errEnd
	})
	<-started
	for i := range 2 {
		if err := stop(); err != errEnd {
			t.Errorf("stop call %d = %v, want run's error %v", i+1, err, errEnd)
		}
	}
}

func TestStartIdentified(t *testing.T) {
	cmd := exec.Command("sleep", "100")
	id := StartIdentified(t, cmd)
	if id.PID != cmd.Process.Pid || id.StartTime == 0 {
		t.Errorf("identity %+v, want pid %d with its start time", id, cmd.Process.Pid)
	}
}

// TestFreePortsHeld: FreePorts never hands out a port a test that has not
// ended holds, though the kernel, asked again, may pick it (its listener
// closed): a thousand picks held at once are distinct, and a port is
// handed out again once its test ended.
func TestFreePortsHeld(t *testing.T) {
	seen := map[int]bool{}
	t.Run("held", func(t *testing.T) {
		for range 1000 {
			p := FreePorts(t, 1)[0]
			if seen[p] {
				t.Fatalf("port %d handed out twice while its first test holds it", p)
			}
			seen[p] = true
		}
	})
	if len(portsHeld) != 0 {
		t.Errorf("%d ports still held after their test ended, want 0", len(portsHeld))
	}
	// Each port is usable: bound a moment after FreePorts returned it.
	for _, p := range FreePorts(t, 3) {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Fatalf("port %d: %v", p, err)
		}
		ln.Close()
	}
}
