package reconciler

import (
	"context"
	"slices"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
)

// gatedStop is a fakeSpawner whose Stop waits for gate: a unit stays
// Stopping until the test lets it go.
type gatedStop struct {
	*fakeSpawner
	gate chan struct{}
}

func (g gatedStop) Stop(ctx context.Context, gr supervisor.Group, sig syscall.Signal, grace time.Duration) error {
	<-g.gate
	return g.fakeSpawner.Stop(ctx, gr, sig, grace)
}

// TestReloadWhileStopping saves a unit's file again while the stop of a
// previous edit is still under way: the unit must end on what the file says
// last, whatever came between (SPEC §6: level-based, nothing lost).
func TestReloadWhileStopping(t *testing.T) {
	withArg := func(a string) func(*units.Spec) {
		return func(s *units.Spec) { s.Command = []string{"/bin/sleep", a} }
	}
	for _, tc := range []struct {
		name  string
		edits []string // the file's command argument after each save; the first is the running version
	}{
		{"back to the running version", []string{"A", "B", "A"}},
		{"two edits in a row", []string{"A", "B", "C"}},
		{"back and forth", []string{"A", "B", "A", "B"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := &fakeSpawner{fail: map[string]error{}}
				sp := gatedStop{fs, make(chan struct{})}
				var mu sync.Mutex
				cur := spec("a", withArg(tc.edits[0]))
				r, err := New(Options{
					Spawner: sp, StateDir: t.TempDir(), Env: []string{"PATH=/bin"}, Rand: func() float64 { return 0.5 },
					Load: func(context.Context) (Loaded, error) {
						mu.Lock()
						defer mu.Unlock()
						return Loaded{Specs: copies([]units.Spec{cur})}, nil
					},
				})
				if err != nil {
					t.Fatal(err)
				}
				runInTest(t, r)
				synctest.Wait()
				for _, e := range tc.edits[1:] {
					mu.Lock()
					cur = spec("a", withArg(e))
					mu.Unlock()
					if _, err := r.Reload(t.Context(), false); err != nil {
						t.Fatal(err)
					}
					synctest.Wait() // the stop of the first edit is held at the gate
				}
				close(sp.gate)
				synctest.Wait()
				want := tc.edits[len(tc.edits)-1]
				last := fs.lastArgv(t)
				if !slices.Equal(last, []string{"/bin/sleep", want}) {
					t.Errorf("got %q running, want the last edit %q", last, want)
				}
				if st := fs.last(t, "a"); isDone(st) {
					t.Errorf("the last spawn of a has exited, want it running")
				}
			})
		})
	}
}

func isDone(p *fakeProc) bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}
