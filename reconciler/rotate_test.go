package reconciler

import (
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
