package reconciler

import (
	"reflect"

	"github.com/hermes-units/hermes/units"
)

// A spec's hash renders it as YAML and sums it: 0.1 to 0.2 ms a unit on a
// loaded machine, and a reload reads every unit file, so hashing all of
// them anew took 10 to 20 ms of a hot reload's ~50 with a hundred units.
// A reload changes few files: a spec equal to the one the last load gave
// for its name has that load's hash.

// hashed is a spec of the last load (in its Loaded's Specs, which no one
// changes once hashed: a pointer, not a copy of 650 bytes a unit) and its
// hash.
type hashed struct {
	spec *units.Spec
	hash string
}

// hashLoaded computes the hash of every spec of l (Loaded.hashAll), with
// r.load.hash for a spec that differs from the one of its name in the last
// load and the last load's hash for one that does not, and keeps l's
// specs for the next load. Equality is reflect.DeepEqual over the whole
// spec: a spec that differs only outside the hashed fields is hashed
// again, which costs time and never a wrong hash. The caller holds load.mu.
func (r *Reconciler) hashLoaded(l *Loaded) {
	last := r.load.last
	next := make(map[string]hashed, len(l.Specs))
	l.hashAll(func(s *units.Spec) string {
		h, ok := last[s.Name]
		if !ok || !reflect.DeepEqual(h.spec, s) {
			h.hash = r.load.hash(*s)
		}
		h.spec = s
		next[s.Name] = h
		return h.hash
	})
	r.load.last = next
}
