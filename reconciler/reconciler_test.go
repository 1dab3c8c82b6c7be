package reconciler

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/units"
)

var errExit1 = errors.New("exit status 1")

// unitErr reads a unit's last error from Run's goroutine.
func (h *harness) unitErr(name string) error {
	h.t.Helper()
	var err error
	if e := h.r.do(context.Background(), func(context.Context) {
		if u := h.r.units[name]; u != nil {
			err = u.err
		}
	}); e != nil {
		h.t.Fatal(e)
	}
	return err
}

func TestRestartPolicy(t *testing.T) {
	tests := []struct {
		policy       units.Restart
		exit         error
		wantState    control.UnitState
		wantRestarts int
	}{
		{units.RestartNo, nil, "exited", 0},
		{units.RestartNo, errExit1, "failed", 0},
		{units.RestartOnFailure, nil, "exited", 0},
		{units.RestartOnFailure, errExit1, "failed", 1}, // backing off
		{units.RestartAlways, nil, "failed", 1},         // backing off
		{units.RestartAlways, errExit1, "failed", 1},
	}
	for _, tt := range tests {
		name := string(tt.policy) + "/" + map[bool]string{true: "status 0", false: "status 1"}[tt.exit == nil]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := start(t, units.RoleGateway, spec("svc", func(s *units.Spec) { s.Restart = tt.policy }))
				synctest.Wait()
				h.fs.last(t, "svc").exit(tt.exit)
				synctest.Wait()
				u := h.unit("svc")
				if u.State != tt.wantState || u.Restarts != tt.wantRestarts {
					t.Errorf("state %s restarts %d, want %s restarts %d (error %q)", u.State, u.Restarts, tt.wantState, tt.wantRestarts, u.Error)
				}
				if tt.wantRestarts > 0 {
					time.Sleep(2 * time.Second)
					synctest.Wait()
					if n := len(h.fs.spawnTimes("svc")); n != 2 {
						t.Errorf("spawned %d times after the backoff, want 2", n)
					}
				}
			})
		})
	}
}

func TestBackoffDoubling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, units.RoleGateway, restarting(units.RestartOnFailure, 16*time.Second, 0))
		synctest.Wait()
		// Rand is 0.5: each delay is d + d/20.
		want := []time.Duration{1050, 2100, 4200, 8400, 16800, 16800}
		for i, w := range want {
			exitAt := time.Now()
			h.fail("svc", 17*time.Second)
			times := h.fs.spawnTimes("svc")
			if len(times) != i+2 {
				t.Fatalf("after exit %d: %d spawns, want %d", i+1, len(times), i+2)
			}
			if got := times[i+1].Sub(exitAt); got != w*time.Millisecond {
				t.Errorf("restart %d came %v after the exit, want %v", i+1, got, w*time.Millisecond)
			}
		}
		if u := h.unit("svc"); u.Restarts != len(want) || u.State != "running" {
			t.Errorf("state %s restarts %d, want running restarts %d", u.State, u.Restarts, len(want))
		}
	})
}

func TestBackoffResetsAfterStableRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, units.RoleGateway, restarting(units.RestartAlways, 4*time.Second, 0))
		synctest.Wait()
		for range 3 { // climb to the cap
			h.fail("svc", 5*time.Second)
		}
		// The last run has now lasted 5s - backoff; let it run past the cap.
		time.Sleep(10 * time.Second)
		exitAt := time.Now()
		h.fail("svc", 5*time.Second)
		times := h.fs.spawnTimes("svc")
		if got := times[len(times)-1].Sub(exitAt); got != 1050*time.Millisecond {
			t.Errorf("restart after a stable run came after %v, want the first backoff 1.05s", got)
		}
	})
}

func TestStartLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, units.RoleGateway, restarting(units.RestartAlways, time.Second, 3))
		synctest.Wait()
		for range 3 {
			h.fail("svc", 2*time.Second)
		}
		if n := len(h.fs.spawnTimes("svc")); n != 3 {
			t.Errorf("spawned %d times, want 3 (the burst)", n)
		}
		u := h.unit("svc")
		if u.State != "failed" || !errors.Is(h.unitErr("svc"), ErrStartLimit) {
			t.Errorf("state %s error %q, want failed with the start limit", u.State, u.Error)
		}
		// Nothing more happens by itself.
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		if n := len(h.fs.spawnTimes("svc")); n != 3 {
			t.Errorf("spawned %d times after the limit, want still 3", n)
		}
		// A manual start clears the limit.
		if err := h.r.Start(context.Background(), "svc"); err != nil {
			t.Fatalf("start after the limit: %v", err)
		}
		if n := len(h.fs.spawnTimes("svc")); n != 4 {
			t.Errorf("spawned %d times after a manual start, want 4", n)
		}
	})
}

func TestStartTimeout(t *testing.T) {
	notify := func(s *units.Spec) {
		s.Ready = units.Ready{Notify: true}
		s.Timeouts.Start = 5 * time.Second
	}
	t.Run("not ready", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := start(t, units.RoleGateway, spec("svc", notify))
			synctest.Wait()
			time.Sleep(4999 * time.Millisecond)
			synctest.Wait()
			if u := h.unit("svc"); u.State != "starting" || u.Ready {
				t.Errorf("before the timeout: state %s ready %v, want starting, not ready", u.State, u.Ready)
			}
			time.Sleep(time.Millisecond)
			synctest.Wait()
			if u := h.unit("svc"); u.State != "failed" || !errors.Is(h.unitErr("svc"), ErrStartTimeout) {
				t.Errorf("after the timeout: state %s error %q, want failed with the start timeout", u.State, u.Error)
			}
			if got := h.fs.stopOrder(); !slices.Equal(got, []string{"svc"}) {
				t.Errorf("stops %v, want [svc]", got)
			}
		})
	})
	t.Run("ready in time", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := start(t, units.RoleGateway, spec("svc", notify))
			synctest.Wait()
			time.Sleep(3 * time.Second)
			h.r.Notify(h.fs.last(t, "svc").g.Leader.PID, map[string]string{"READY": "1"})
			synctest.Wait()
			time.Sleep(time.Minute)
			synctest.Wait()
			if u := h.unit("svc"); u.State != "running" || !u.Ready {
				t.Errorf("state %s ready %v, want running and ready", u.State, u.Ready)
			}
		})
	})
}

func TestRuntimeMax(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, units.RoleGateway, spec("svc", func(s *units.Spec) { s.Timeouts.RuntimeMax = 10 * time.Second }))
		synctest.Wait()
		time.Sleep(9 * time.Second)
		synctest.Wait()
		if u := h.unit("svc"); u.State != "running" {
			t.Errorf("at 9s: state %s, want running", u.State)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if u := h.unit("svc"); u.State != "failed" || !errors.Is(h.unitErr("svc"), ErrRuntimeMax) {
			t.Errorf("at 10s: state %s error %q, want failed with runtime max", u.State, u.Error)
		}
	})
}

func TestWatchdog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, units.RoleGateway, spec("svc", func(s *units.Spec) { s.Timeouts.Watchdog = 4 * time.Second }))
		synctest.Wait()
		p := h.fs.last(t, "svc")
		h.fs.mu.Lock()
		env := h.fs.spawns[0].spec.Env
		h.fs.mu.Unlock()
		for _, want := range []string{"WATCHDOG_USEC=4000000", "NOTIFY_SOCKET=/tmp/hermes-test-notify"} {
			if !slices.Contains(env, want) {
				t.Errorf("unit env lacks %s: %v", want, env)
			}
		}
		if slices.Contains(env, "NOTIFY_SOCKET=/run/systemd/notify") {
			t.Errorf("unit env inherits hermesd's own NOTIFY_SOCKET: %v", env)
		}
		for range 3 {
			time.Sleep(3 * time.Second)
			h.r.Notify(p.g.Leader.PID, map[string]string{"WATCHDOG": "1"})
			synctest.Wait()
		}
		time.Sleep(3900 * time.Millisecond)
		synctest.Wait()
		if u := h.unit("svc"); u.State != "running" {
			t.Errorf("3.9s after the last ping: state %s, want running", u.State)
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		if u := h.unit("svc"); u.State != "failed" || !errors.Is(h.unitErr("svc"), ErrWatchdog) {
			t.Errorf("4s after the last ping: state %s error %q, want failed with the watchdog", u.State, u.Error)
		}
	})
}

func TestOrderAndRequires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, units.RoleGateway,
			spec("web", func(s *units.Spec) { s.After = []string{"api"} }),
			spec("api", func(s *units.Spec) { s.After = []string{"db"}; s.Requires = []string{"db"} }),
			spec("db", func(s *units.Spec) { s.Ready = units.Ready{Notify: true} }),
		)
		synctest.Wait()
		if n := len(h.fs.spawnTimes("api")) + len(h.fs.spawnTimes("web")); n != 0 {
			t.Errorf("api/web spawned %d times before db is ready, want 0", n)
		}
		if u := h.unit("api"); u.State != "starting" || !strings.Contains(u.Error, "db") {
			t.Errorf("api: state %s error %q, want starting, waiting for db", u.State, u.Error)
		}
		h.r.Notify(h.fs.last(t, "db").g.Leader.PID, map[string]string{"READY": "1"})
		synctest.Wait()
		for _, n := range []string{"db", "api", "web"} {
			if u := h.unit(n); u.State != "running" {
				t.Errorf("%s: state %s, want running", n, u.State)
			}
		}
		// db fails for good: api requires it and stops; web only ordered after api, stays.
		h.fs.last(t, "db").exit(errExit1)
		synctest.Wait()
		if u := h.unit("api"); u.State != "starting" || u.PID != 0 {
			t.Errorf("api after db failed: state %s pid %d, want stopped and waiting", u.State, u.PID)
		}
		if u := h.unit("web"); u.State != "running" {
			t.Errorf("web after db failed: state %s, want running", u.State)
		}
		// db back: api comes back.
		if err := h.r.Start(context.Background(), "db"); err != nil {
			t.Fatal(err)
		}
		h.r.Notify(h.fs.last(t, "db").g.Leader.PID, map[string]string{"READY": "1"})
		synctest.Wait()
		if n := len(h.fs.spawnTimes("api")); n != 2 {
			t.Errorf("api spawned %d times, want 2", n)
		}
	})
}

func TestShutdown(t *testing.T) {
	units4 := func() []units.Spec {
		return []units.Spec{
			spec("a"),
			spec("b", func(s *units.Spec) { s.After = []string{"a"} }),
			spec("c", func(s *units.Spec) { s.After = []string{"b"} }),
			spec("job", func(s *units.Spec) { s.Ownership, s.Reason, s.After = units.Adoptable, "background job", []string{"a"} }),
			spec("keep", func(s *units.Spec) { s.Ownership, s.Reason = units.PersistOnRelease, "cache" }),
		}
	}
	tests := []struct {
		role        units.Role
		wantStops   []string
		wantSurvive map[string]bool
	}{
		{units.RoleGateway, []string{"c", "b", "a"}, map[string]bool{"a": false, "b": false, "c": false, "job": true, "keep": true}},
		{units.RoleWorker, []string{"c", "job", "b", "a"}, map[string]bool{"a": false, "b": false, "c": false, "job": false, "keep": true}},
	}
	for _, tt := range tests {
		t.Run(string(tt.role), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := start(t, tt.role, units4()...)
				synctest.Wait()
				h.fs.mu.Lock()
				for _, s := range h.fs.spawns {
					if s.spec.Survive != tt.wantSurvive[s.spec.Unit] {
						t.Errorf("%s spawned with Survive=%v, want %v", s.spec.Unit, s.spec.Survive, tt.wantSurvive[s.spec.Unit])
					}
				}
				h.fs.mu.Unlock()
				if err := h.shutdown(); err != nil {
					t.Fatalf("Run after shutdown: %v", err)
				}
				got := h.fs.stopOrder()
				// c and job have no order between them; compare as the
				// reverse dependency order requires.
				if !validStopOrder(got, tt.wantStops) {
					t.Errorf("stop order %v, want %v (or an equivalent order)", got, tt.wantStops)
				}
			})
		})
	}
}

// validStopOrder: same set, and every unit stopped before what it depends on.
func validStopOrder(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	pos := map[string]int{}
	for i, n := range got {
		pos[n] = i
	}
	for _, n := range want {
		if _, ok := pos[n]; !ok {
			return false
		}
	}
	before := [][2]string{{"c", "b"}, {"b", "a"}, {"job", "a"}}
	for _, p := range before {
		i, ok1 := pos[p[0]]
		j, ok2 := pos[p[1]]
		if ok1 && ok2 && i > j {
			return false
		}
	}
	return true
}

func TestJobNotStartedAtLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, units.RoleGateway, spec("job", func(s *units.Spec) { s.Schedule = "*/15 * * * *" }))
		synctest.Wait()
		if n := len(h.fs.spawnTimes("job")); n != 0 {
			t.Errorf("a scheduled job was spawned %d times at load, want 0", n)
		}
		if err := h.r.Start(context.Background(), "job"); err != nil {
			t.Fatal(err)
		}
		if n := len(h.fs.spawnTimes("job")); n != 1 {
			t.Errorf("job spawned %d times after start, want 1", n)
		}
	})
}

// TestAfterUnloadedFile: a unit ordered after one whose file does not
// load (it never did: no version to keep) waits, and says why, instead of
// running as if the unit were not declared; once the file is fixed, the
// dependent starts after it as after: says.
func TestAfterUnloadedFile(t *testing.T) {
	for _, key := range []string{"after", "requires"} {
		t.Run(key, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, spec("app", func(s *units.Spec) {
					s.After = []string{"migrate"}
					if key == "requires" {
						s.After, s.Requires = nil, []string{"migrate"}
					}
				}))
				h.errs = []*units.Error{{File: "/units/migrate.yaml", Line: 2, Column: 1, Msg: `unknown key "comand"; did you mean "command"?`}}
				h.run(New(h.options(units.RoleGateway)))
				synctest.Wait()
				if n := len(h.fs.spawnTimes("app")); n != 0 {
					t.Fatalf("app spawned %d times while migrate.yaml does not load, want 0", n)
				}
				want := "migrate, whose unit file does not load: /units/migrate.yaml:2:1: unknown key"
				if u := h.unit("app"); u.State != "starting" || !strings.Contains(u.Error, want) {
					t.Errorf("app: state %s error %q, want starting and an error containing %q", u.State, u.Error, want)
				}
				h.mu.Lock()
				h.specs = append(h.specs, spec("migrate", func(s *units.Spec) { s.Type = units.Oneshot }))
				h.errs = nil
				h.mu.Unlock()
				if _, err := h.r.Reload(t.Context(), false); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				if key == "after" {
					if n := len(h.fs.spawnTimes("app")); n != 0 {
						t.Fatalf("app spawned %d times before migrate is done, want 0", n)
					}
					h.fs.last(t, "migrate").exit(nil)
					synctest.Wait()
				}
				if n := len(h.fs.spawnTimes("app")); n != 1 {
					t.Errorf("app spawned %d times once migrate loaded, want 1", n)
				}
			})
		})
	}
}
