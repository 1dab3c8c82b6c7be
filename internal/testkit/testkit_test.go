package testkit

import (
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
	"time"

	"github.com/hermes-units/hermes/internal/procfd"
	"go.uber.org/goleak"
)

// helperEnv makes the test binary play a daemon instead of running the
// tests: "ready" sends READY=1 and waits for SIGTERM, "exit" prints a line
// and exits 3 at once, "mute" sends nothing and waits for SIGTERM.
const helperEnv = "TESTKIT_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "ready":
		c, err := net.Dial("unixgram", os.Getenv("NOTIFY_SOCKET"))
		if err != nil {
			os.Exit(2)
		}
		c.Write([]byte("READY=1"))
		c.Close()
		select {}
	case "exit":
		fmt.Println("giving up")
		os.Exit(3)
	case "mute":
		select {}
	}
	goleak.VerifyTestMain(m)
}

// recorder is a testing.TB that records failures instead of failing, to
// test what the helpers report.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

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
	return r.errors
}

func TestWithin(t *testing.T) {
	start := time.Now()
	n := 0
	if !Within(time.Second, func() bool { n++; return n == 3 }) {
		t.Fatal("Within: false for a condition true on its third check")
	}
	if n != 3 {
		t.Errorf("checked %d times, want 3", n)
	}
	if Within(50*time.Millisecond, func() bool { return false }) {
		t.Error("Within: true for a condition never true")
	}
	if el := time.Since(start); el < 50*time.Millisecond {
		t.Errorf("gave up after %v, want the 50ms deadline passed", el)
	}
	last := false
	deadline := time.Now().Add(30 * time.Millisecond)
	if !Within(30*time.Millisecond, func() bool { last = !time.Now().Before(deadline); return last }) || !last {
		t.Error("Within: false for a condition that holds once the deadline has passed; want it checked once more then")
	}
}

func TestEventually(t *testing.T) {
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
	if len(got) != 1 || !strings.HasPrefix(got[0], "after 20ms: check ") || !strings.HasSuffix(got[0], fmt.Sprintf("check %d: web inactive", n)) {
		t.Errorf("EventuallyOK reported %q, want the last check's error (check %d)", got, n)
	}
}

func TestEventuallyOn(t *testing.T) {
	for _, tt := range []struct {
		name string
		sent int  // values sent on wake
		hold int  // the condition holds once this many have been received
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
			wake := make(chan int)
			var mu sync.Mutex
			got := 0
			go func() {
				for i := range tt.sent {
					mu.Lock()
					got = i + 1
					mu.Unlock()
					select {
					case wake <- i:
					case <-time.After(time.Second):
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
			if tt.want == "" && len(errs) > 0 || tt.want != "" && !slices.Equal(errs, []string{tt.want}) {
				t.Errorf("reported %q, want %q", errs, tt.want)
			}
		})
	}
}

func TestWriteUnits(t *testing.T) {
	dir := UnitsDir(t, map[string]string{"web.yaml": "command: [a]\n", "db.yml": "shell: b\n"})
	if filepath.Base(dir) != "units" {
		t.Errorf("UnitsDir: %s, want a directory named units", dir)
	}
	WriteUnits(t, dir, map[string]string{"web.yaml": "command: [c]\n"})
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("units directory mode %v, want 0700", st.Mode().Perm())
	}
	for name, want := range map[string]string{"web.yaml": "command: [c]\n", "db.yml": "shell: b\n"} {
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != want {
			t.Errorf("%s holds %q, want %q", name, b, want)
		}
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", name, st.Mode().Perm(), err)
		}
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

func TestExactFDs(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	own, err := procfd.List(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		extra []*os.File
		want  int // failures
	}{
		{"clean", nil, 0},
		{"leaked write end", []*os.File{w}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command("/bin/sh", "-c", "read -r x")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = null, null, tt.extra
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { stdin.Close(); cmd.Wait() }()
			want := map[int]string{0: "pipe:[", 1: "/dev/null", 2: "/dev/null"}
			for _, f := range own {
				if f.Num > 2 && !f.CloseOnExec() && f.Num != 3 {
					want[f.Num] = f.Target // inherited from this test's runner: every child has it
				}
			}
			got := fails(t, func(tb testing.TB) { ExactFDs(tb, "child", cmd.Process.Pid, want, own) })
			if len(got) != tt.want {
				t.Fatalf("reported %q, want %d failures", got, tt.want)
			}
			if tt.want > 0 && !strings.HasPrefix(got[0], "child: ") {
				t.Errorf("failure %q does not start with who", got[0])
			}
		})
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
