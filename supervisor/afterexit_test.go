package supervisor

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
)

// TestAfterExit: a func given to AfterExit runs once the leader is reaped
// (Done closed, Err set), one whose arrangement was stopped never does,
// one given after the exit runs at once, and stop reports whether it kept
// its func from running. Arranging funcs on many children adds no
// goroutine: the supervisor's wait for each exit is the only one.
func TestAfterExit(t *testing.T) {
	for _, mode := range []Mode{ModeCgroup, ModePGroup} {
		t.Run(string(mode), func(t *testing.T) {
			o, err := New(Options{Mode: mode, Grace: testGrace})
			if err != nil && mode == ModeCgroup {
				t.Skipf("cgroup mode is unavailable here (no writable cgroup v2 hierarchy): pgroup mode is tested: %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			const n = 20
			var cs []*Child
			for range n {
				c, err := o.SpawnOwned(t.Context(), Spec{Unit: "w", Argv: []string{"sleep", "1000"}, Env: os.Environ()})
				if err != nil {
					t.Fatal(err)
				}
				cs = append(cs, c)
			}
			before := testkit.SettledGoroutines()
			ran := make(chan *Child, 2*n)
			stops := make([]func() bool, n)
			for i, c := range cs {
				c.AfterExit(func() {
					select {
					case <-c.Done():
					default:
						t.Errorf("child %d: its func ran before Done was closed", i)
					}
					ran <- c
				})
				stops[i] = c.AfterExit(func() { t.Errorf("child %d: a stopped func ran", i) })
			}
			if after := testkit.SettledGoroutines(); after > before {
				t.Errorf("arranging %d funcs on %d children took %d goroutines more (%d to %d), want none", 2*n, n, after-before, before, after)
			}
			for i, stop := range stops {
				if !stop() {
					t.Errorf("child %d: stop before the exit reported its func already run", i)
				}
				if stop() {
					t.Errorf("child %d: a second stop reported it kept the func from running", i)
				}
			}
			for _, c := range cs {
				if err := syscall.Kill(c.Leader.PID, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			}
			seen := map[*Child]bool{}
			for len(seen) < n {
				select {
				case c := <-ran:
					if seen[c] {
						t.Fatalf("a func of %d ran twice", c.Leader.PID)
					}
					seen[c] = true
					if c.Err() == nil {
						t.Errorf("child %d killed: Err nil when its func ran", c.Leader.PID)
					}
				case <-time.After(30 * time.Second):
					t.Fatalf("%d of %d funcs ran after their children were killed", len(seen), n)
				}
			}
			late := make(chan struct{})
			if stop := cs[0].AfterExit(func() { close(late) }); stop() {
				t.Error("stop of a func given after the exit reported it kept it from running")
			}
			select {
			case <-late:
			case <-time.After(30 * time.Second):
				t.Fatal("a func given after the exit did not run")
			}
		})
	}
}
