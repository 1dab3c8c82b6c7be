package reconciler

import (
	"context"
	"maps"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/hermes-units/hermes/internal/logfile"
	"github.com/hermes-units/hermes/units"
)

// fakeLogs keeps the set Watch and Add make, and counts the whole sets
// it is given.
type fakeLogs struct {
	mu      sync.Mutex
	cur     map[string]logfile.Limits
	watches int
}

func (f *fakeLogs) Watch(set map[string]logfile.Limits) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cur = maps.Clone(set)
	f.watches++
}

func (f *fakeLogs) Add(path string, lim logfile.Limits) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cur == nil {
		f.cur = map[string]logfile.Limits{}
	}
	if lim.MaxSize <= 0 { // out of the set, as logfile.Logs takes it
		delete(f.cur, path)
		return
	}
	f.cur[path] = lim
}

func (f *fakeLogs) last() map[string]logfile.Limits {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.cur)
}

// TestRotationOffRunsGoroutine: log rotation is file work without a bound
// Run could afford (a copy, a slow disk); Run only hands Logs the set of
// logs to keep within their limits, after each load and start, and Logs
// rotates them on its own goroutine as they grow. A unit without max_size
// is not in the set; a removed unit leaves it.
func TestRotationOffRunsGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &fakeLogs{}
		state := t.TempDir()
		h := newHarness(t,
			spec("web", func(s *units.Spec) { s.Log = units.Log{MaxSize: 1 << 20, Keep: 3} }),
			spec("plain", func(*units.Spec) {}),
		)
		o := h.options(units.RoleGateway)
		o.StateDir, o.Logs = state, logs
		h.run(New(o))
		synctest.Wait()
		want := map[string]logfile.Limits{filepath.Join(state, "logs", "web.log"): {MaxSize: 1 << 20, Keep: 3}}
		if got := logs.last(); !reflect.DeepEqual(got, want) {
			t.Fatalf("logs watched: got %v, want %v", got, want)
		}
		logs.mu.Lock()
		if logs.watches != 1 {
			t.Errorf("%d whole sets given for one load: a start adds its own log, not the set again", logs.watches)
		}
		logs.mu.Unlock()
		h.mu.Lock()
		h.specs = h.specs[1:]
		h.mu.Unlock()
		if _, err := h.r.Reload(t.Context(), false); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := logs.last(); len(got) != 0 {
			t.Errorf("logs watched after web was removed: %v, want none", got)
		}
	})
}

// TestLogsFollowEdits: after the first load, Run gives Logs only the log
// files a load or a start changes, not the whole set again; through edits
// (a new unit, a unit removed while running and one removed while
// stopped, limits set and dropped, a log file moved) the set Logs holds
// stays the one the units call for (logSet).
func TestLogsFollowEdits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &fakeLogs{}
		sized := func(n int) func(*units.Spec) {
			return func(s *units.Spec) { s.Log = units.Log{MaxSize: units.Size(n), Keep: 3} }
		}
		h := newHarness(t, spec("web", sized(1<<20)), spec("plain"), spec("gone", sized(1<<20)),
			spec("idle", sized(1<<20), func(s *units.Spec) { s.Type = units.Oneshot }))
		o := h.options(units.RoleGateway)
		o.StateDir, o.Logs = t.TempDir(), logs
		h.run(New(o))
		synctest.Wait()
		h.fs.last(t, "idle").exit(nil) // done: stopped when it is removed
		synctest.Wait()
		for _, step := range []struct {
			name  string
			specs []units.Spec
		}{
			{"a unit added, one removed", []units.Spec{spec("web", sized(1<<20)), spec("plain"), spec("idle", sized(1<<20), func(s *units.Spec) { s.Type = units.Oneshot }), spec("new", sized(2<<20))}},
			{"limits set and changed", []units.Spec{spec("web", sized(3<<20)), spec("plain", sized(1<<20)), spec("idle", sized(1<<20), func(s *units.Spec) { s.Type = units.Oneshot }), spec("new", sized(2<<20))}},
			{"a log file moved", []units.Spec{spec("web", sized(3<<20), func(s *units.Spec) { s.Log.Path = filepath.Join(o.StateDir, "elsewhere.log") }), spec("plain", sized(1<<20)), spec("idle", sized(1<<20), func(s *units.Spec) { s.Type = units.Oneshot }), spec("new", sized(2<<20))}},
			{"limits dropped, a stopped unit removed", []units.Spec{spec("web", sized(3<<20), func(s *units.Spec) { s.Log.Path = filepath.Join(o.StateDir, "elsewhere.log") }), spec("plain"), spec("new", sized(2<<20))}},
		} {
			h.mu.Lock()
			h.specs = step.specs
			h.mu.Unlock()
			if _, err := h.r.Reload(t.Context(), false); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			var want map[string]logfile.Limits
			if err := h.r.call(t.Context(), false, func(context.Context) { want = h.r.logSet() }); err != nil {
				t.Fatal(err)
			}
			if got := logs.last(); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: logs watched %v, want %v", step.name, got, want)
			}
		}
		logs.mu.Lock()
		defer logs.mu.Unlock()
		if logs.watches != 1 {
			t.Errorf("%d whole sets given, want 1: the loads after the first give the files they change", logs.watches)
		}
	})
}
