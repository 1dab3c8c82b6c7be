package reconciler

import (
	"context"
	"maps"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-units/hermes/units"
)

// TestReloadHashesOffRun: a reload hashes the specs it read before it hands
// them to Run's goroutine, so a status is answered while a reload of many
// units is being hashed.
func TestReloadHashesOffRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := &files{specs: map[string]units.Spec{"a": spec("a", withArgv("1")), "b": spec("b")}}
		r := mustNew(t, fakeOptions(t, &fakeSpawner{fail: map[string]error{}}, fs.load))
		var gated atomic.Bool
		gate := make(chan struct{})
		r.load.hash = func(s units.Spec) string {
			if gated.Load() && s.Name == "a" {
				<-gate // a slow hash
			}
			return s.Hash()
		}
		runInTest(t, r)
		synctest.Wait()

		gated.Store(true)
		fs.set(spec("a", withArgv("2")))
		reloaded := make(chan error, 1)
		go func() { _, err := r.Reload(t.Context(), false); reloaded <- err }()
		synctest.Wait() // the reload is hashing a
		if _, err := r.Status(t.Context()); err != nil {
			t.Fatal(err)
		}
		close(gate)
		if err := <-reloaded; err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := len(r.opt.Spawner.(*fakeSpawner).spawnTimes("a")); n != 2 {
			t.Errorf("a spawned %d times, want 2 (restarted for its edit)", n)
		}
	})
}

// TestOrderFollowsEdits: the dependency order, kept between passes,
// follows the units added, removed and reordered by reloads.
func TestOrderFollowsEdits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := &files{specs: map[string]units.Spec{"a": spec("a"), "b": spec("b"), "c": spec("c")}}
		r := runOver(t, &fakeSpawner{fail: map[string]error{}}, fs)
		order := func() []string {
			var out []string
			if err := r.do(t.Context(), func(context.Context) {
				for _, u := range r.order() {
					out = append(out, u.spec.Name)
				}
			}); err != nil {
				t.Fatal(err)
			}
			return out
		}
		for _, step := range []struct {
			name string
			edit func()
			want []string
		}{
			{"as loaded", func() {}, []string{"a", "b", "c"}},
			{"a after c (no restart)", func() { fs.set(spec("a", func(s *units.Spec) { s.After = []string{"c"} })) }, []string{"c", "a", "b"}},
			{"c after b, with a restart", func() {
				fs.set(spec("c", withArgv("2"), func(s *units.Spec) { s.After = []string{"b"} }))
			}, []string{"b", "c", "a"}},
			{"c removed", func() { fs.del("c") }, []string{"a", "b"}},
			{"d added", func() { fs.set(spec("d")) }, []string{"a", "b", "d"}},
		} {
			step.edit()
			reloadNow(t, r)
			if got := order(); !slices.Equal(got, step.want) {
				t.Errorf("%s: order %v, want %v", step.name, got, step.want)
			}
		}
	})
}

// TestStatusRSSReads: status asked many times a second reads each unit's
// RSS from /proc at most once per RSSMaxAge, shows the last value read,
// and reads a new pid at once.
func TestStatusRSSReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := &files{specs: map[string]units.Spec{"a": spec("a"), "b": spec("b")}}
		sp := &fakeSpawner{fail: map[string]error{}}
		r := mustNew(t, fakeOptions(t, sp, fs.load))
		var reads atomic.Int64
		r.served.rss.read = func(pid int) int64 { return 1000 * reads.Add(1) }
		runInTest(t, r)
		synctest.Wait()
		status := func() map[string]int64 { return rssByUnit(t, r) }
		first := status()
		for range 10 {
			time.Sleep(RSSMaxAge / 20)
			if got := status(); got["a"] != first["a"] || got["b"] != first["b"] {
				t.Fatalf("RSS %v within RSSMaxAge, want the first read %v", got, first)
			}
		}
		if n := reads.Load(); n != 2 {
			t.Errorf("%d /proc reads for 11 statuses within RSSMaxAge, want 2 (one per unit)", n)
		}
		sp.last(t, "a").exit(errExit1) // a fails (restart: no), then is started again
		synctest.Wait()
		if err := r.Start(t.Context(), "a"); err != nil {
			t.Fatal(err)
		}
		if got := status(); got["a"] != 3000 || reads.Load() != 3 {
			t.Errorf("after a's restart: RSS %d with %d reads, want its new pid read at once (3000, 3 reads)", got["a"], reads.Load())
		}
		time.Sleep(RSSMaxAge)
		status()
		synctest.Wait() // the reads it asked for, off its goroutine
		if n := reads.Load(); n != 5 {
			t.Errorf("%d reads once RSSMaxAge passed, want 5 (both units again)", n)
		}
		if got := status(); got["a"] < 4000 || got["b"] < 4000 {
			t.Errorf("RSS %v after the reads, want the values read again (4000 and 5000)", got)
		}
	})
}

// TestStatusNotHeldByRSSReads: once a unit's RSS is older than RSSMaxAge,
// a status shows the last value read and does not wait for the new read,
// which a goroutine makes; one such read at a time, whatever the number
// of statuses asked meanwhile.
func TestStatusNotHeldByRSSReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := &files{specs: map[string]units.Spec{"a": spec("a"), "b": spec("b")}}
		r := mustNew(t, fakeOptions(t, &fakeSpawner{fail: map[string]error{}}, fs.load))
		var reads atomic.Int64
		gate := make(chan struct{})
		var gated atomic.Bool
		r.served.rss.read = func(pid int) int64 {
			if gated.Load() {
				<-gate // /proc slow to answer
			}
			return 1000 * reads.Add(1)
		}
		runInTest(t, r)
		synctest.Wait()
		rssOf := func() map[string]int64 { return rssByUnit(t, r) }
		first := rssOf() // the first read of each pid: at once
		gated.Store(true)
		time.Sleep(RSSMaxAge)
		for range 3 { // answered while the reads wait at the gate
			if got := rssOf(); !maps.Equal(got, first) {
				t.Errorf("stale RSS: got %v, want the last read %v", got, first)
			}
		}
		close(gate)
		synctest.Wait()
		if n := reads.Load(); n != 4 {
			t.Errorf("%d reads, want 4 (two first reads, then one read of each stale pid for three statuses)", n)
		}
	})
}

// rssByUnit asks r for its status and returns each unit's RSS by name.
func rssByUnit(t *testing.T, r *Reconciler) map[string]int64 {
	t.Helper()
	st, err := r.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, u := range st.Units {
		out[u.Name] = u.RSS
	}
	return out
}
