package reconciler

import (
	"maps"
	"slices"
)

// hermesd's clean stop (SPEC §6) is a phase of Run with state of its own:
// the shutdown, from the shutdown input (beginShutdown) until Run returns.
//
// Its passes look only at what changed. Once it has begun, no unit starts
// (the passes only stop, and adoptions and reloads are refused), and an
// active unit keeps the spec it had (a reload's new version replaces a
// unit only once its stop is over): so the units that can hold another
// running, by naming it in after: or requires:, are known at the start,
// and what changes a unit's state is an input about that unit (an exit, a
// stop's end, a timer: each names its unit) or a stop the shutdown begins.
// A pass then looks at the units the step's inputs named and those it
// stopped (touched), in place of every unit: at 5000 units, each stop's
// end cost a walk of the 5000 units, several times over (a stop pass, the
// published changes, the check that every stop is over), one pass for
// every few dozen ends, and the last unit's exit came long before the walks
// were done. A control call may change any unit: the pass that follows it
// looks at every unit, as the first pass does.
type shutdown struct {
	// all: the next pass looks at every unit (the first pass, and the one
	// that follows a control call).
	all bool
	// touched names the units the step's inputs were about, and those the
	// step began to stop: with all false, the only units a pass looks at.
	touched map[string]bool
	// waits names the units whose stop the clean stop waits for (settled).
	waits map[string]bool
	// holds names, for each unit active and not kept at the start, the
	// units it names in after: and requires: (itself aside); holders is
	// its reverse. Only these units can hold another running (held).
	holds, holders map[string][]string
	// pos is each unit's place in the dependency order at the start: the
	// order of a pass's changes.
	pos map[string]int
	// looked counts the units the passes looked at (tests).
	looked int
}

// beginShutdown starts the clean stop: the backoffs and waits end, and the
// next pass looks at every unit.
func (r *Reconciler) beginShutdown() {
	r.log.Info("stopping: owned units in reverse dependency order; survivors keep running")
	s := &shutdown{all: true, touched: map[string]bool{}, waits: map[string]bool{},
		holds: map[string][]string{}, holders: map[string][]string{}, pos: map[string]int{}}
	for i, u := range r.order() {
		s.pos[u.spec.Name] = i
		u.stopTimer(timerBackoff)
		if u.state == BackingOff || u.state == Waiting {
			u.state = Inactive
		}
		if !u.state.active() || keeps(r.opt.Role, u.spec.Ownership) {
			continue
		}
		for _, d := range slices.Concat(u.spec.After, u.spec.Requires) {
			if d != u.spec.Name && !slices.Contains(s.holds[u.spec.Name], d) {
				s.holds[u.spec.Name] = append(s.holds[u.spec.Name], d)
				s.holders[d] = append(s.holders[d], u.spec.Name)
			}
		}
	}
	r.shut = s
}

// touch notes that the input ev may have changed the unit it names, or,
// for an input that names none (a control call), any unit. nil-safe: a
// no-op before the shutdown.
func (s *shutdown) touch(ev any) {
	if s == nil {
		return
	}
	switch ev := ev.(type) {
	case exitEvent:
		s.touched[ev.name] = true
	case stopDoneEvent:
		s.touched[ev.name] = true
	case emptiedEvent:
		s.touched[ev.name] = true
	case timerEvent:
		s.touched[ev.name] = true
	case readyEvent:
		s.touched[ev.name] = true
	case mainEvent:
		s.touched[ev.name] = true
	case goneEvent:
		s.touched[ev.name] = true
	case releasedGone: // the released rows, no unit
	case jobEvent:
		if ev.name == "" {
			s.all = true // a fire, a clock step
			return
		}
		s.touched[ev.name] = true
	default: // a control call, a notification (its unit is found by its sender)
		s.all = true
	}
}

// held reports whether an active unit that the role does not keep names
// the unit name in after: or requires: (Run's goroutine).
func (r *Reconciler) held(name string) bool {
	for _, h := range r.shut.holders[name] {
		if u := r.units[h]; u != nil && u.state.active() && !keeps(r.opt.Role, u.spec.Ownership) {
			return true
		}
	}
	return false
}

// shutdownPass stops, in reverse dependency order, every active unit that
// the role does not keep and that nothing active holds (held): after a
// pass that looks at every unit, those that an end of a stop of this step
// may have freed, the units the stopped ones named.
func (r *Reconciler) shutdownPass() {
	s := r.shut
	var look []*unit
	if s.all {
		look = r.order()
	} else {
		names := map[string]bool{}
		for n := range s.touched {
			if u := r.units[n]; u == nil || !u.state.active() {
				for _, d := range s.holds[n] {
					names[d] = true
				}
			}
		}
		look = r.inOrder(names)
	}
	s.looked += len(look)
	for i := len(look) - 1; i >= 0; i-- {
		u := look[i]
		if !u.state.active() || u.state == Stopping || keeps(r.opt.Role, u.spec.Ownership) || r.held(u.spec.Name) {
			continue
		}
		r.stop(u, stopShutdown, nil)
	}
}

// inOrder is the units of names that exist, in the dependency order of
// the shutdown's start.
func (r *Reconciler) inOrder(names map[string]bool) []*unit {
	var us []*unit
	for _, n := range slices.SortedFunc(maps.Keys(names), func(a, b string) int { return r.shut.pos[a] - r.shut.pos[b] }) {
		if u := r.units[n]; u != nil {
			us = append(us, u)
		}
	}
	return us
}

// passed ends a pass: it returns the units whose changes the pass's end
// publishes (every unit, in dependency order; during the shutdown, those
// it touched, unless it may have changed any), after noting, during the
// shutdown, which of them the clean stop still waits for.
func (r *Reconciler) passed() []*unit {
	s := r.shut
	if s == nil {
		return r.order()
	}
	var look []*unit
	if s.all {
		look = r.order()
		clear(s.waits)
	} else {
		look = r.inOrder(s.touched)
		for n := range s.touched {
			delete(s.waits, n) // those still there are noted again below
		}
	}
	s.looked += len(look)
	for _, u := range look {
		if u.state.active() && !(keeps(r.opt.Role, u.spec.Ownership) && u.state != Stopping) {
			s.waits[u.spec.Name] = true
		}
	}
	s.all = false
	// A new map, not clear: a Go map keeps the room it once needed, and
	// ranging over it costs that room. The first pass touches every unit,
	// so a cleared map made each later pass's few names cost a walk of
	// thousands of empty slots, several times over.
	s.touched = map[string]bool{}
	return look
}

// settled reports whether the clean stop is complete: no unit that must
// stop has a group left.
func (r *Reconciler) settled() bool { return r.shut != nil && len(r.shut.waits) == 0 }

func (r *Reconciler) finishShutdown() {
	for _, u := range r.units {
		u.run.end()
		u.stopTimer(timerBackoff)
		u.stop.reply(ErrStopped)
	}
}
