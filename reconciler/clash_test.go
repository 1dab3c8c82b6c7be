package reconciler

import (
	"context"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
)

// gatedUnits is a fakeSpawner whose Stop of a gated unit waits until the
// test opens that unit's gate: the unit stays Stopping meanwhile.
type gatedUnits struct {
	*fakeSpawner
	mu    sync.Mutex
	gates map[string]chan struct{}
}

func newGatedUnits(names ...string) *gatedUnits {
	g := &gatedUnits{fakeSpawner: &fakeSpawner{fail: map[string]error{}}, gates: map[string]chan struct{}{}}
	for _, n := range names {
		g.gates[n] = make(chan struct{})
	}
	return g
}

func (g *gatedUnits) Stop(ctx context.Context, gr supervisor.Group, sig syscall.Signal, grace time.Duration) error {
	g.mu.Lock()
	gate := g.gates[gr.Unit]
	g.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return g.fakeSpawner.Stop(ctx, gr, sig, grace)
}

func (g *gatedUnits) open(name string) { close(g.gates[name]) }

// files is a units directory in memory for Options.Load.
type files struct {
	mu    sync.Mutex
	specs map[string]units.Spec
}

func (f *files) set(s units.Spec) { f.mu.Lock(); f.specs[s.Name] = s; f.mu.Unlock() }
func (f *files) del(name string)  { f.mu.Lock(); delete(f.specs, name); f.mu.Unlock() }

func (f *files) load(context.Context) (Loaded, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var l Loaded
	for _, s := range f.specs {
		l.Specs = append(l.Specs, &s)
	}
	return l, nil
}

// runOver runs a Reconciler over sp and fs until the test ends; call it
// inside a synctest bubble.
func runOver(t *testing.T, sp Spawner, fs *files) *Reconciler {
	t.Helper()
	r := mustNew(t, fakeOptions(t, sp, fs.load))
	runInTest(t, r)
	synctest.Wait()
	return r
}

func withArgv(a string) func(*units.Spec) {
	return func(s *units.Spec) { s.Command = []string{"/bin/sleep", a} }
}

func withPorts(p ...int) func(*units.Spec) {
	return func(s *units.Spec) { s.Ports = p }
}

func reloadNow(t *testing.T, r *Reconciler) {
	t.Helper()
	if _, err := r.Reload(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
}

func stateOf(t *testing.T, r *Reconciler, name string) (State, string) {
	t.Helper()
	var st State
	var msg string
	if err := r.do(t.Context(), func(context.Context) {
		if u := r.units[name]; u != nil {
			st, msg = u.state, u.waitMsg
		}
	}); err != nil {
		t.Fatal(err)
	}
	return st, msg
}

// TestStartWaitsOnlyForClashingStops: a start waits for the stops of its
// own reload and earlier ones, and for a stopping unit that declares one of
// its ports; not for the stops of later reloads, which under a stream of
// edits never all end.
func TestStartWaitsOnlyForClashingStops(t *testing.T) {
	for _, tc := range []struct {
		name     string
		xPorts   []int // the ports x declares while it stops
		wantWait bool  // y waits for x's stop
		wantMsg  string
	}{
		{"a later reload's stop does not hold a start", nil, false, ""},
		{"a stop on a shared port holds a start", []int{8080}, true, "waiting for x to stop: it declares port 8080 too"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sp := newGatedUnits("x", "y")
				fs := &files{specs: map[string]units.Spec{
					"x": spec("x", withArgv("1"), withPorts(tc.xPorts...)),
					"y": spec("y", withArgv("1")),
				}}
				r := runOver(t, sp, fs)
				// Reload 1 edits y (its stop is held), reload 2 edits x
				// (held too); then y's stop ends while x's goes on.
				fs.set(spec("y", withArgv("2"), withPorts(8080)))
				reloadNow(t, r)
				fs.set(spec("x", withArgv("2"), withPorts(tc.xPorts...)))
				reloadNow(t, r)
				sp.open("y")
				synctest.Wait()
				n := len(sp.spawnTimes("y"))
				st, msg := stateOf(t, r, "y")
				if tc.wantWait {
					if n != 1 || st != Waiting || msg != tc.wantMsg {
						t.Errorf("y: %d spawns, state %v %q; want 1 spawn, waiting with %q", n, st, msg, tc.wantMsg)
					}
				} else if n != 2 || st != Running {
					t.Errorf("y: %d spawns, state %v %q; want restarted (2 spawns) and running while x still stops", n, st, msg)
				}
				sp.open("x")
				synctest.Wait()
				for _, u := range []string{"x", "y"} {
					if n := len(sp.spawnTimes(u)); n != 2 {
						t.Errorf("%s: %d spawns once every stop ended, want 2", u, n)
					}
				}
			})
		})
	}
}

// TestRenameWaitsForItsReload: a renamed unit starts only once its old
// name's group is empty (same reload), and a unit added by a later reload
// waits for it too (an earlier reload's stop).
func TestRenameWaitsForItsReload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp := newGatedUnits("old")
		fs := &files{specs: map[string]units.Spec{"old": spec("old")}}
		r := runOver(t, sp, fs)
		fs.del("old")
		fs.set(spec("new"))
		reloadNow(t, r)
		fs.set(spec("later"))
		reloadNow(t, r)
		for _, u := range []string{"new", "later"} {
			if n := len(sp.spawnTimes(u)); n != 0 {
				t.Errorf("%s spawned %d times while old still stops, want 0", u, n)
			}
			if _, msg := stateOf(t, r, u); !strings.Contains(msg, "waiting for old to stop") {
				t.Errorf("%s waits with %q, want it to wait for old", u, msg)
			}
		}
		sp.open("old")
		synctest.Wait()
		for _, u := range []string{"new", "later"} {
			if n := len(sp.spawnTimes(u)); n != 1 {
				t.Errorf("%s spawned %d times once old stopped, want 1", u, n)
			}
		}
	})
}
