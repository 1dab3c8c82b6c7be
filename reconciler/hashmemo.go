package reconciler

import (
	"maps"
	"reflect"

	"github.com/hermes-units/hermes/units"
)

// A spec's hash renders it as YAML and sums it: 0.1 to 0.2 ms a unit on a
// loaded machine. A reload changes few files, and a units.Cache gives the
// spec of a file that did not change again: a spec that is the one the
// last load gave for its name (the same pointer) is not looked at, one
// equal to it has its hash.

// lastLoad is the last load's specs, as it gave them and by name with
// their hashes.
type lastLoad struct {
	specs  []*units.Spec
	byName map[string]hashed
}

// hashed is a spec of the last load (in its Loaded's Specs: nobody
// changes it) and its hash.
type hashed struct {
	spec *units.Spec
	hash string
}

// hashLoaded gives l the hashes of its specs that are not the ones of
// their names in the last load (Loaded.hashes): the last load's hash for
// a spec equal to it (reflect.DeepEqual: a spec that differs only outside
// the hashed fields is hashed again, which costs time and never a wrong
// hash), r.load.hash's for the others. With keep, l is the last load for
// the next one (a load that is not applied, a dry run, is not: the units
// then have the specs of the one before, and the next load is compared
// with that). The caller holds load.mu.
func (r *Reconciler) hashLoaded(l *Loaded, keep bool) {
	last := &r.load.last
	l.hashes = map[string]string{}
	var news []*units.Spec
	for i, s := range l.Specs {
		if i < len(last.specs) && last.specs[i] == s {
			continue // where the last load had it: no look up of its name
		}
		h, ok := last.byName[s.Name]
		if ok && h.spec == s {
			continue
		}
		if !ok || !reflect.DeepEqual(h.spec, s) {
			h.hash = r.load.hash(*s)
		}
		l.hashes[s.Name] = h.hash
		news = append(news, s)
	}
	if !keep {
		return
	}
	if last.byName == nil {
		last.byName = make(map[string]hashed, len(l.Specs))
	}
	last.specs = l.Specs // nobody changes a Loaded's Specs once it is read
	for _, s := range news {
		last.byName[s.Name] = hashed{s, l.hashes[s.Name]}
	}
	if len(last.byName) > len(l.Specs) { // some names are no longer loaded
		loaded := make(map[string]bool, len(l.Specs))
		for _, s := range l.Specs {
			loaded[s.Name] = true
		}
		maps.DeleteFunc(last.byName, func(n string, _ hashed) bool { return !loaded[n] })
	}
}
