package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/internal/testkit"
	"golang.org/x/sys/unix"
)

// screen collects what a program writes to its terminal, with the escape
// sequences taken out: the text of each line it draws, in order.
type screen struct {
	mu      sync.Mutex
	raw     bytes.Buffer
	changed chan struct{} // closed and replaced on each write
}

var escapes = regexp.MustCompile(`\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78DEHMc]`)

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raw.Write(p)
	close(s.changed)
	s.changed = make(chan struct{})
	return len(p), nil
}

// text is everything drawn from offset on, without escapes, and the
// offset of its end.
func (s *screen) text(from int) (string, int, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.raw.Bytes()
	return escapes.ReplaceAllString(string(b[min(from, len(b)):]), ""), len(b), s.changed
}

// wait waits until what was drawn since from matches re, and returns the
// offset after it; it fails the test after 10 s with what was drawn.
func (s *screen) wait(t *testing.T, from int, what string, re *regexp.Regexp) int {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		txt, end, changed := s.text(from)
		if re.MatchString(txt) {
			return end
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the screen did not show %s within 10s; it drew:\n%s", what, txt)
		}
	}
}

// terminal is a program runInPTY runs in a pseudo-terminal.
type terminal struct {
	tty    *os.File      // the master side: what is written to it, the program reads as typed keys
	screen *screen       // what the program drew
	exited chan struct{} // closed once err is set
	err    error         // cmd.Wait's result
}

// runInPTY starts cmd in a pseudo-terminal of rows × cols and copies what
// it draws to the terminal's screen. At the test's end cmd is killed if it
// still runs, and the copy is joined.
func runInPTY(t *testing.T, cmd *exec.Cmd, rows, cols uint16) *terminal {
	t.Helper()
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: rows, Cols: cols})
	if err != nil {
		t.Fatal(err)
	}
	// A read of a blocking descriptor is not ended by Close: read the
	// master through a non-blocking duplicate, which the poller serves.
	fd, err := unix.Dup(int(ptmx.Fd()))
	ptmx.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	term := &terminal{tty: os.NewFile(uintptr(fd), "ptmx"), screen: &screen{changed: make(chan struct{})}, exited: make(chan struct{})}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 4096)
		for {
			n, err := term.tty.Read(buf)
			term.screen.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	go func() { term.err = cmd.Wait(); close(term.exited) }()
	t.Cleanup(func() {
		select {
		case <-term.exited:
		default:
			cmd.Process.Kill()
			<-term.exited
		}
		term.tty.Close()
		<-copied
	})
	return term
}

// TestTopPTY runs `hermesctl top` in a pseudo-terminal against a daemon:
// it renders the units, the log pane follows the selected unit's log,
// and the stop key stops the selected unit (which the view then shows
// inactive, from the event the daemon publishes).
func TestTopPTY(t *testing.T) {
	hermesctl := hermesctlBin(t)
	socket, d := serveFake(t, fakeScript{
		Status: control.Status{
			Daemon:     control.Daemon{PID: 4000, Role: "gateway"},
			Supervisor: control.Supervisor{Mode: "cgroup", Health: control.Health{State: control.HealthOK}},
			Units: []control.Unit{
				{Name: "web", State: "running", PID: 4242, PGID: 4242, Ownership: "owned", Ready: true, Uptime: time.Minute, RSS: 12 << 20, Restarts: 2},
				{Name: "db", State: "running", PID: 4243, PGID: 4243, Ownership: "adoptable", Ready: true},
			},
			Proxy: &control.Proxy{Listen: "127.0.0.1:7411", Breakers: []control.Breaker{
				{Session: "s1", Provider: "local", Model: "m", Streak: 1, Threshold: 3},
			}},
		},
		Logs: map[string]string{"web": "web.log", "db": "db.log"},
	})
	logPath := filepath.Join(d.work, "web.log")
	if err := os.WriteFile(logPath, []byte("web says hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(hermesctl, "--socket", socket, "top")
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", "NO_COLOR=", "GORACE=atexit_sleep_ms=0")
	term := runInPTY(t, cmd, 30, 120)
	scr := term.screen

	at := scr.wait(t, 0, "the units", regexp.MustCompile(`(?s)> web +running +yes +4242 +1m00s +2 .*12\.0M +owned.*db +running +yes +4243 .*adoptable`))
	scr.wait(t, 0, "the log of web, the selected unit", regexp.MustCompile(`log: web.*\n(.*\n)*web says hello`))
	scr.wait(t, 0, "the proxy pane", regexp.MustCompile(`s1 +local/m +streak 1/3 +closed`))

	f, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("web writes more\n")
	f.Close()
	at = scr.wait(t, at, "the appended log line", regexp.MustCompile(`web writes more`))

	term.tty.Write([]byte("x"))
	scr.wait(t, at, "web inactive after the stop key", regexp.MustCompile(`> web +inactive`))
	calls, _ := os.ReadFile(d.calls)
	if !strings.Contains(string(calls), "stop web\n") || strings.Contains(string(calls), "stop db") {
		t.Errorf("daemon calls %q, want stop web and no stop of db", calls)
	}

	term.tty.Write([]byte("q"))
	testkit.Receive(t, 10*time.Second, term.exited, "top did not exit within 10s of q")
	if term.err != nil {
		t.Errorf("top after q: %v", term.err)
	}
}

func TestDependents(t *testing.T) {
	us := []control.Unit{
		{Name: "db"}, {Name: "cache"},
		{Name: "api", Requires: []string{"db"}},
		{Name: "web", Requires: []string{"api", "cache"}},
		{Name: "cron"},
	}
	for _, tc := range []struct {
		unit string
		want string
	}{
		{"db", "db api web"},
		{"cache", "cache web"},
		{"web", "web"},
		{"cron", "cron"},
	} {
		t.Run(tc.unit, func(t *testing.T) {
			if got := strings.Join(dependents(us, tc.unit), " "); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestRunTopNoTerminal calls top's run function without cobra on streams
// that are no terminal: a usage error, before it dials hermesd (none
// serves the socket), with nothing drawn.
func TestRunTopNoTerminal(t *testing.T) {
	o, out, _ := testClient(t, "", false)
	o.in = strings.NewReader("q")
	err := runTop(t.Context(), &topOptions{o})
	if got := report(err, io.Discard); got != exitcode.Usage || !errors.Is(err, ErrNoTerminal) {
		t.Errorf("got %v, exit status %d; want ErrNoTerminal, exit status %d", err, got, exitcode.Usage)
	}
	if out.Len() > 0 {
		t.Errorf("got output %q, want none", out.String())
	}
}
