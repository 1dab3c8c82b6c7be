package reconciler

import (
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/hermes-units/hermes/units"
)

// TestReloadHashesChangedSpecs: a reload hashes only the specs that differ
// from the last load's, and an edit is still seen as one: the unit edited
// restarts, the others keep running; an edit outside the hashed fields is
// hashed again and restarts nothing.
func TestReloadHashesChangedSpecs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := &files{specs: map[string]units.Spec{"a": spec("a", withArgv("1")), "b": spec("b"), "c": spec("c")}}
		r := mustNew(t, fakeOptions(t, &fakeSpawner{fail: map[string]error{}}, fs.load))
		var mu sync.Mutex
		var hashedNames []string
		r.load.hash = func(s units.Spec) string {
			mu.Lock()
			hashedNames = append(hashedNames, s.Name)
			mu.Unlock()
			return s.Hash()
		}
		took := func() []string {
			mu.Lock()
			defer mu.Unlock()
			out := slices.Sorted(slices.Values(hashedNames))
			hashedNames = nil
			return out
		}
		runInTest(t, r)
		synctest.Wait()
		if got, want := took(), []string{"a", "b", "c"}; !slices.Equal(got, want) {
			t.Fatalf("first load hashed %v, want %v", got, want)
		}
		fsp := r.opt.Spawner.(*fakeSpawner)
		for _, step := range []struct {
			name   string
			edit   func()
			hashed []string
			spawns map[string]int // spawns so far
		}{
			{"nothing changed", func() {}, nil, map[string]int{"a": 1, "b": 1, "c": 1}},
			{"a's command", func() { fs.set(spec("a", withArgv("2"))) }, []string{"a"}, map[string]int{"a": 2, "b": 1, "c": 1}},
			{"b's description (not hashed)", func() { fs.set(spec("b", func(s *units.Spec) { s.Description = "x" })) }, []string{"b"}, map[string]int{"a": 2, "b": 1, "c": 1}},
			{"a's command back", func() { fs.set(spec("a", withArgv("1"))) }, []string{"a"}, map[string]int{"a": 3, "b": 1, "c": 1}},
		} {
			// Steps in order, in one bubble: no t.Run inside synctest.
			step.edit()
			reloadNow(t, r)
			synctest.Wait()
			if got := took(); !slices.Equal(got, step.hashed) {
				t.Errorf("%s: hashed %v, want %v", step.name, got, step.hashed)
			}
			for n, want := range step.spawns {
				if got := len(fsp.spawnTimes(n)); got != want {
					t.Errorf("%s: %s spawned %d times, want %d", step.name, n, got, want)
				}
			}
		}
	})
}
