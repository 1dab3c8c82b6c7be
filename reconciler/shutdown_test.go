package reconciler

import (
	"context"
	"maps"
	"testing"

	"github.com/hermes-units/hermes/units"
)

// TestDependedOn: a shutdown pass leaves running the units an active unit
// that stops names in after: or requires:, read in one look at each unit:
// not those named only by an inactive unit, by a unit the role keeps, or
// by the unit itself.
func TestDependedOn(t *testing.T) {
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
	got := r.dependedOn()
	want := map[string]bool{"db": true, "cache": true}
	if !maps.Equal(got, want) {
		t.Errorf("dependedOn = %v, want %v", got, want)
	}
}
