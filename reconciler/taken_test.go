package reconciler

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
)

// adopting is a fakeSpawner that can adopt and release groups, and whose
// WatchExit channels the test closes: the adopted leader's exit.
type adopting struct {
	*fakeSpawner
	mu    sync.Mutex
	exits map[int]chan struct{} // by leader pid
}

func newAdopting() *adopting {
	return &adopting{fakeSpawner: &fakeSpawner{fail: map[string]error{}}, exits: map[int]chan struct{}{}}
}

func (a *adopting) Own(context.Context, supervisor.Group) error     { return nil }
func (a *adopting) Release(context.Context, supervisor.Group) error { return nil }

func (a *adopting) exit(pid int) chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.exits[pid]
	if c == nil {
		c = make(chan struct{})
		a.exits[pid] = c
	}
	return c
}

func (a *adopting) WatchExit(_ context.Context, g supervisor.Group) (<-chan struct{}, error) {
	return a.exit(g.Leader.PID), nil
}

// adoptFake adopts a group that exists only in the fake, under name.
func adoptFake(t *testing.T, r *Reconciler, a *adopting, pgid int, name string) {
	t.Helper()
	g := supervisor.Group{PGID: pgid, Leader: proc.Identity{PID: pgid, StartTime: 1}}
	var err error
	if e := r.do(t.Context(), func(ctx context.Context) { _, err = r.take(ctx, a, g, name, guards{}) }); e != nil {
		t.Fatal(e)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func unitError(t *testing.T, r *Reconciler, name string) string {
	t.Helper()
	st, err := r.Status(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	return st.Units[0].Error
}

// TestUnitFileOverAdoptedName: a unit file whose name an adopted group
// holds (`adopt --as NAME`) says so in status, and its unit starts once
// the group is gone: ended by itself, stopped, or released and then ended.
// A file removed meanwhile starts nothing.
func TestUnitFileOverAdoptedName(t *testing.T) {
	const pgid = 4_100_000
	for _, tc := range []struct {
		name    string
		gone    func(t *testing.T, r *Reconciler, a *adopting)
		remove  bool // the unit file is removed before the group goes
		release bool // the group is released: the unit waits for its row to go
	}{
		{"group exits", func(t *testing.T, r *Reconciler, a *adopting) { close(a.exit(pgid)) }, false, false},
		{"group stopped", func(t *testing.T, r *Reconciler, a *adopting) {
			if err := r.Stop(t.Context(), "web"); err != nil {
				t.Fatal(err)
			}
		}, false, false},
		{"file removed, then group exits", func(t *testing.T, r *Reconciler, a *adopting) { close(a.exit(pgid)) }, true, false},
		{"group released", func(t *testing.T, r *Reconciler, a *adopting) {
			if _, err := r.Release(t.Context(), "web"); err != nil {
				t.Fatal(err)
			}
		}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := newAdopting()
				fs := &files{specs: map[string]units.Spec{}}
				r := runOver(t, a, fs)
				adoptFake(t, r, a, pgid, "web")
				fs.set(spec("web"))
				reloadNow(t, r)
				if n := len(a.spawnTimes("web")); n != 0 {
					t.Fatalf("web spawned %d times while the adopted group holds its name, want 0", n)
				}
				want := "name web is taken by an adopted group (pgid 4100000); stop it or rename the unit file"
				if got := unitError(t, r, "web"); got != want {
					t.Errorf("status error %q, want %q", got, want)
				}
				reloadNow(t, r) // a later reload changes nothing
				if tc.remove {
					fs.del("web")
					reloadNow(t, r)
					if got := unitError(t, r, "web"); got != "" {
						t.Errorf("status error %q once the file is removed, want none", got)
					}
				}
				tc.gone(t, r, a)
				synctest.Wait()
				wantSpawns := 1
				if tc.remove {
					wantSpawns = 0
				}
				if tc.release {
					wantSpawns = 0
					if got := unitError(t, r, "web"); !strings.Contains(got, "taken by a released group (pgid 4100000)") {
						t.Errorf("status error %q after the release, want the released group named", got)
					}
					dropReleased(t, r, a, pgid)
					wantSpawns = 1
				}
				if n := len(a.spawnTimes("web")); n != wantSpawns {
					t.Errorf("web spawned %d times once the adopted group is gone, want %d", n, wantSpawns)
				}
				if wantSpawns == 1 {
					if st, _ := stateOf(t, r, "web"); st != Running {
						t.Errorf("web is %v, want running", st)
					}
				}
			})
		})
	}
}

// dropReleased ends the released fake group pgid: its leader exits (the
// group exists only in the fake, so it is empty).
func dropReleased(t *testing.T, r *Reconciler, a *adopting, pgid int) {
	t.Helper()
	close(a.exit(pgid))
	synctest.Wait()
}
