package supervisor

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
)

// threads is the number of OS threads of the test process.
func threads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads line in /proc/self/status")
	return 0
}

// threadGrowth returns the most OS threads the test process gained over
// before, sampled for half a second: a goroutine blocked in a system call
// gets its own thread only once the runtime notices it is blocked, and the
// kernel gives no event for that.
func threadGrowth(t *testing.T, before int) int {
	t.Helper()
	most := 0
	for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		most = max(most, threads(t)-before)
	}
	return most
}

// TestWaitersHoldNoThread checks that waiting for a child's exit parks a
// goroutine on a pidfd instead of holding an OS thread in wait4, and that
// the exit status still arrives through Done and Err.
func TestWaitersHoldNoThread(t *testing.T) {
	const batch = 16
	o := newTestOwner(t, Options{Mode: ModePGroup})
	defer o.Close()
	env := []string{"PATH=" + os.Getenv("PATH")}
	spawn := func(argv ...string) *Child {
		t.Helper()
		c, err := o.SpawnOwned(t.Context(), Spec{Unit: "w", Argv: argv, Env: env})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	var kids []*Child
	// The first batch lets the runtime grow the threads spawning needs.
	for range batch {
		kids = append(kids, spawn("sleep", "1000"))
	}
	before := threads(t)
	for range batch {
		kids = append(kids, spawn("sleep", "1000"))
	}
	if got := threadGrowth(t, before); got >= batch/2 {
		t.Errorf("OS threads added by %d more waiting children: got %d, want < %d (one per child means a thread blocked in wait4)", batch, got, batch/2)
	}

	for _, tc := range []struct {
		name string
		c    *Child
		kill bool
		want ExitError // zero: success
	}{
		{"status 0", spawn("true"), false, ExitError{}},
		{"status 3", spawn("sh", "-c", "exit 3"), false, ExitError{Code: 3}},
		{"killed", kids[0], true, ExitError{Code: -1, Signal: syscall.SIGKILL}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.kill {
				syscall.Kill(tc.c.PGID, syscall.SIGKILL)
			}
			testkit.Receive(t, 10*time.Second, tc.c.Done(), "Done not closed 10 s after the leader's exit")
			var ee *ExitError
			switch err := tc.c.Err(); {
			case tc.want == ExitError{}:
				if err != nil {
					t.Errorf("Err: got %v, want nil", err)
				}
			case !errors.As(err, &ee):
				t.Errorf("Err: got %v, want *ExitError %v", err, &tc.want)
			case *ee != tc.want:
				t.Errorf("Err: got %+v, want %+v", *ee, tc.want)
			}
		})
	}
}

// TestWatchExit checks that WatchExit reports a leader's exit, ends its
// watch when ctx ends, and holds no OS thread per watched process.
func TestWatchExit(t *testing.T) {
	const n = 16
	var cmds []*exec.Cmd
	for range n {
		cmd := exec.Command("sleep", "1000")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		cmds = append(cmds, cmd)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	watch := func(cmd *exec.Cmd) <-chan struct{} {
		t.Helper()
		id, err := proc.Read(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := WatchExit(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	first := watch(cmds[0])
	before := threads(t)
	var chs []<-chan struct{}
	for _, cmd := range cmds[1:] {
		chs = append(chs, watch(cmd))
	}
	if got := threadGrowth(t, before); got >= n/2 {
		t.Errorf("OS threads added by %d watches: got %d, want < %d", n-1, got, n/2)
	}
	select {
	case <-first:
		t.Fatal("exit reported while the process runs")
	default:
	}
	cmds[0].Process.Kill()
	testkit.Receive(t, 10*time.Second, first, "exit not reported 10 s after the kill")
	cancel()
	for _, ch := range chs {
		select {
		case <-ch:
			t.Error("exit reported for a process that runs, after ctx ended")
		default:
		}
	}
	if _, err := WatchExit(t.Context(), proc.Identity{PID: cmds[1].Process.Pid, StartTime: 1}); !errors.Is(err, proc.ErrGone) {
		t.Errorf("WatchExit of a recycled pid: got %v, want proc.ErrGone", err)
	}
}
