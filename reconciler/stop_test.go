package reconciler

import (
	"context"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
)

// slowStopper is a fakeSpawner whose Stop makes the process exit, then
// holds its return until release is closed (the bookkeeping after the
// group emptied: the supervisor's ledger write); Members lists a process
// while left is set, and counts its calls.
type slowStopper struct {
	fakeSpawner
	mu      sync.Mutex
	release chan struct{} // guarded by mu
	left    bool          // a process of the group outlives the leader; guarded by mu
	stopped int           // Stop calls returned; guarded by mu
	looks   int           // Members calls; guarded by mu
}

func (s *slowStopper) Stop(ctx context.Context, g supervisor.Group, sig syscall.Signal, grace time.Duration) error {
	s.fakeSpawner.Stop(ctx, g, sig, grace)
	s.mu.Lock()
	release := s.release
	s.mu.Unlock()
	select {
	case <-release:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	s.stopped++
	s.mu.Unlock()
	return nil
}

func (s *slowStopper) Empty(g supervisor.Group) bool { return len(s.Members(g)) == 0 }

func (s *slowStopper) Members(supervisor.Group) []proc.Identity {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.looks++
	if s.left {
		return []proc.Identity{{PID: 4_999_999, StartTime: 1}}
	}
	return nil
}

func (s *slowStopper) StopMain(ctx context.Context, g supervisor.Group, _ proc.Identity, sig syscall.Signal, grace time.Duration) error {
	return s.Stop(ctx, g, sig, grace)
}

// TestReloadStartsOnceGroupEmpty: the new version of an edited unit starts
// once the old group is empty at its leader's exit, before the spawner's
// Stop has returned; with a process of the group left after the leader,
// it waits for Stop. Shutdown waits for every Stop to return.
func TestReloadStartsOnceGroupEmpty(t *testing.T) {
	for _, tc := range []struct {
		name      string
		left      bool
		wantEarly int // spawns of a before Stop returns
	}{
		{"leader alone", false, 2},
		{"a child outlives the leader", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sp := &slowStopper{fakeSpawner: fakeSpawner{fail: map[string]error{}}, release: make(chan struct{}), left: tc.left}
				fs := &files{specs: map[string]units.Spec{"a": spec("a", withArgv("1"))}}
				r := mustNew(t, fakeOptions(t, sp, fs.load))
				stop := runInTest(t, r)
				synctest.Wait()

				fs.set(spec("a", withArgv("2")))
				reloadNow(t, r)
				synctest.Wait() // Stop holds its return
				if got := len(sp.spawnTimes("a")); got != tc.wantEarly {
					t.Errorf("a spawned %d times before Stop returned, want %d", got, tc.wantEarly)
				}
				close(sp.release)
				synctest.Wait()
				if got := len(sp.spawnTimes("a")); got != 2 {
					t.Errorf("a spawned %d times after Stop returned, want 2", got)
				}
				st, err := r.Status(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				if len(st.Units) != 1 || st.Units[0].State != "running" {
					t.Errorf("status %+v, want a running", st.Units)
				}

				// Shutdown: Run returns once Stop has, not at the leader's exit.
				sp.mu.Lock()
				sp.release = make(chan struct{})
				release := sp.release
				looks := sp.looks
				sp.mu.Unlock()
				heldUntil(t, release, "Run returned before the shutdown's Stop did", stop)
				sp.mu.Lock()
				defer sp.mu.Unlock()
				if sp.stopped != 2 {
					t.Errorf("Run returned after %d Stop calls returned, want 2 (the reload's and shutdown's)", sp.stopped)
				}
				if sp.looks != looks {
					t.Errorf("shutdown looked at the group %d times, want 0", sp.looks-looks)
				}
			})
		})
	}
}

// TestStoppedWithRequired: after `stop web`, api, which requires web, is
// stopped with it (systemd stops what Requires= a stopped unit), not
// "starting, waiting for web": nothing will start web until asked; its
// row says why, and api starts again with web.
func TestStoppedWithRequired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, units.RoleGateway, spec("web"),
			spec("api", func(s *units.Spec) { s.After, s.Requires = []string{"web"}, []string{"web"} }),
			spec("edge", func(s *units.Spec) { s.After, s.Requires = []string{"api"}, []string{"api"} }))
		synctest.Wait()
		if err := h.r.Stop(context.Background(), "web"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		for _, name := range []string{"api", "edge"} {
			u := h.unit(name)
			if u.State != "stopped" || !strings.Contains(u.Error, "stopped with") {
				t.Errorf("%s after stop web: state %s error %q, want stopped, with why", name, u.State, u.Error)
			}
		}
		if err := h.r.Start(context.Background(), "web"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if u := h.unit("edge"); u.State != "running" {
			t.Errorf("edge after start web: state %s, want running again", u.State)
		}
	})
}
