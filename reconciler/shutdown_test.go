package reconciler

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/hermes-units/hermes/units"
)

// TestHeld: a shutdown pass leaves running the units an active unit
// that stops names in after: or requires:, as they were when the
// shutdown began: not those named only by an inactive unit, by a unit the
// role keeps, or by the unit itself; and no longer those whose holders
// have stopped since.
func TestHeld(t *testing.T) {
	r, err := New(Options{Spawner: &fakeSpawner{}, Load: func(context.Context) (Loaded, error) { return Loaded{}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	add := func(s units.Spec, st State) { r.units[s.Name] = &unit{spec: &s, state: st} }
	after := func(d ...string) func(*units.Spec) { return func(s *units.Spec) { s.After = d } }
	requires := func(d ...string) func(*units.Spec) { return func(s *units.Spec) { s.Requires = d } }
	add(spec("db"), Running)
	add(spec("cache"), Running)
	add(spec("web", after("db"), requires("cache")), Stopping)
	add(spec("old", requires("queue")), Inactive)
	add(spec("queue"), Running)
	add(spec("keeper", requires("store"), func(s *units.Spec) { s.Ownership = units.PersistOnRelease }), Running)
	add(spec("store"), Running)
	add(spec("self", after("self")), Running)
	r.beginShutdown()
	check := func(want map[string]bool) {
		t.Helper()
		for n := range r.units {
			if got := r.held(n); got != want[n] {
				t.Errorf("held(%s) = %v, want %v", n, got, want[n])
			}
		}
	}
	check(map[string]bool{"db": true, "cache": true})
	r.units["web"].state = Inactive
	check(nil)
}

// TestShutdownLooksAtChanges: the passes of a clean stop look at the
// units that changed, not at every unit each time: a chain of n units,
// which stops one unit a pass, costs its passes a few looks per unit in
// all, where a walk of every unit at each pass cost n² looks.
func TestShutdownLooksAtChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 200
		var specs []units.Spec
		for i := range n {
			specs = append(specs, spec(fmt.Sprintf("u%03d", i), func(s *units.Spec) {
				if i > 0 {
					s.Requires = []string{fmt.Sprintf("u%03d", i-1)}
				}
			}))
		}
		h := newHarness(t, specs...)
		h.run(New(fakeOptions(t, h.fs, h.load)))
		synctest.Wait()
		if err := h.shutdown(); err != nil {
			t.Fatalf("Run after shutdown: %v", err)
		}
		want := make([]string, n)
		for i := range n {
			want[i] = fmt.Sprintf("u%03d", n-1-i)
		}
		if got := h.fs.stopOrder(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("stop order: got %v, want %v", got, want)
		}
		if got, most := h.r.shut.looked, 10*n; got > most {
			t.Errorf("the shutdown's passes looked at %d units, want at most %d (%d units)", got, most, n)
		}
	})
}
