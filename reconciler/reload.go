package reconciler

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/units"
)

func hash(s units.Spec) string { return s.Hash() }

// diff computes a reload plan (pure): each unit of us (all of them, in
// ordered) is compared with the spec of its name in l by its current
// version (currentOf), and l is settled (every unit of l.Specs loads: see
// settlePorts). A spec that is the one its unit has (the same
// *units.Spec: a file the loader did not read again) is kept with no look
// at it. A unit whose file failed to load is kept at its last good version
// (never stopped for a broken file); a renamed file is a stop of the old
// name and a start of the new one. With order false the plan has no Order
// (a reload no caller waits for: the steps of every unit, each with the
// words of what it waits for, were most of such a reload's work on Run's
// goroutine at thousands of units, for no reader). n is what of l apply
// looks at.
func diff(us map[string]*unit, ordered []*unit, l Loaded, order bool) (p control.Plan, n news) {
	p = control.Plan{Start: []string{}, Stop: []string{}, Restart: []string{}, Keep: make([]string, 0, len(l.Specs)), Errors: wireErrors(l.Errors)}
	n.specs = map[string]*units.Spec{}
	matched := 0
	for i, s := range l.Specs {
		// Most specs are the ones their units have, where the units' order
		// has them (l.Specs is in start order too): kept with no look up of
		// their name.
		if i < len(ordered) {
			if v, ok := currentOf(ordered[i]); ok && v.spec == s {
				p.Keep = append(p.Keep, s.Name)
				matched++
				continue
			}
		}
		v, ok := currentOf(us[s.Name])
		switch {
		case !ok:
			p.Start = append(p.Start, s.Name)
			n.specs[s.Name] = s
		case v.spec == s:
			p.Keep = append(p.Keep, s.Name)
		case v.hash != l.hashOf(s):
			p.Restart = append(p.Restart, s.Name)
			n.specs[s.Name] = s
		default:
			p.Keep = append(p.Keep, s.Name)
			n.kept = append(n.kept, s)
		}
		if ok {
			matched++
		}
	}
	if matched < countCurrent(ordered) {
		p.Stop, p.Keep = gone(ordered, l, p.Keep)
	}
	for _, l := range [][]string{p.Start, p.Stop, p.Restart, p.Keep} {
		slices.Sort(l)
	}
	if order {
		p.Order = StartOrder(l.Specs)
	}
	return p, n
}

// news is what of a load apply looks at (diff): the specs of the plan's
// starts and restarts, by name, and those of its kept units that are not
// the ones the units have (they differ outside the hash).
type news struct {
	specs map[string]*units.Spec
	kept  []*units.Spec
}

// currentOf is the version of u that its file is compared with: the one
// it is about to run when it stops to switch to one, else the one it
// has. ok false: u is nil, being removed, or an adopted group (no unit
// file).
func currentOf(u *unit) (_ version, ok bool) {
	switch {
	case u == nil || u.removed() || u.external:
		return version{}, false
	case u.stop != nil && u.stop.next != nil:
		return *u.stop.next, true
	}
	return version{spec: u.spec, hash: u.hash}, true
}

func countCurrent(us []*unit) int {
	n := 0
	for _, u := range us {
		if _, ok := currentOf(u); ok {
			n++
		}
	}
	return n
}

// gone lists the current units of us that l does not declare: stopped,
// or kept (added to keep) when their file failed to load.
func gone(us []*unit, l Loaded, keep []string) (stop, _ []string) {
	declared := make(map[string]bool, len(l.Specs))
	for _, s := range l.Specs {
		declared[s.Name] = true
	}
	invalid := invalidUnits(l.Errors)
	stop = []string{}
	for _, u := range us {
		n := u.spec.Name
		if _, ok := currentOf(u); !ok || declared[n] {
			continue
		}
		if invalid[n] {
			keep = append(keep, n)
		} else {
			stop = append(stop, n)
		}
	}
	return stop, keep
}

// invalidUnits names the units whose file is among es's.
func invalidUnits(es []*units.Error) map[string]bool {
	invalid := map[string]bool{}
	for _, e := range es {
		invalid[unitOf(e.File)] = true
	}
	return invalid
}

// StartOrder lists specs in the order they start: each after the units it
// names in after: and requires: (ties and cycles broken by name, as the
// reconciler orders them), with what it waits for (the dependency
// conditions: README, Dependency conditions).
func StartOrder(specs []*units.Spec) []control.Step {
	by := make(map[string]*units.Spec, len(specs))
	for _, s := range specs {
		by[s.Name] = s
	}
	var out []control.Step
	for _, s := range depOrder(by, func(s *units.Spec) *units.Spec { return s }) {
		out = append(out, control.Step{Unit: s.Name, Type: typeOf(s), Waits: waits(s, by)})
	}
	return out
}

// waits says, in words, what s waits for before it starts.
func waits(s *units.Spec, by map[string]*units.Spec) []string {
	var out []string
	for _, d := range s.After {
		switch dep := by[d]; {
		case dep == nil:
			out = append(out, d+" (not declared: not waited for)")
		case dep.Type == units.Oneshot:
			out = append(out, d+" is done (exit 0)")
		default:
			out = append(out, d+" is ready")
		}
	}
	for _, d := range s.Requires {
		if !slices.Contains(s.After, d) {
			out = append(out, d+" is up (requires; starts alongside it)")
		}
	}
	return out
}

func typeOf(s *units.Spec) units.Type {
	if s.Type == "" {
		return units.Simple
	}
	return s.Type
}

// unitOf is the unit name of a unit file path.
func unitOf(file string) string {
	b := filepath.Base(file)
	for _, ext := range []string{".yaml", ".yml"} {
		if n, ok := strings.CutSuffix(b, ext); ok {
			return n
		}
	}
	return b
}

// plan is diff against the current units; units already being removed do
// not count as current. A unit stopping to switch to a pending version
// counts as that version: the file is compared with what the unit is about
// to run, so that saving the running version back over a pending edit is a
// change (the unit must not go on to the edit the file no longer holds).
//
// Before the diff, plan settles the port rule in l (settlePorts), against
// the ports of the versions the units have: l then holds the outcome that
// apply carries out. With order false the plan has no Order (see diff).
func (r *Reconciler) plan(l *Loaded, order bool) (control.Plan, news) {
	*l = settlePorts(*l, func(n string) ([]int, bool) {
		v, ok := currentOf(r.units[n])
		if !ok {
			return nil, false
		}
		return v.spec.Ports, true
	})
	return diff(r.units, r.order(), *l, order)
}

// settlePorts decides the clashes on ports that LoadDir left open: it
// gave l both units of each (units.Dir.Contested). The one that declared
// the port first keeps it: a unit the reconciler has (declared: the ports
// of the version it runs or is about to run, by unit) keeps its ports
// against a unit added since, or one changed to declare a port it did not;
// of two such new claims (at hermesd's start, or in one reload), the later
// name fails, as units.LoadDir decides. So a running unit is never failed
// by a newcomer, and the newcomer loads once the holder gives the port up.
// The units that fail leave l.Specs (a unit of theirs keeps its last good
// version: diff) and their errors join l.Errors. A settled Loaded (ports
// nil: every Loaded but LoadDir's) is returned as it is, and so is one
// where no unit fails.
func settlePorts(l Loaded, declared func(unit string) ([]int, bool)) Loaded {
	if len(l.ports) == 0 {
		return l
	}
	specs := make(map[string]*units.Spec, len(l.ports))
	for _, s := range l.Specs {
		if _, ok := l.ports[s.Name]; ok {
			specs[s.Name] = s
		}
	}
	failed := l.ports.Settle(func(n string) units.Rank {
		had, ok := declared(n)
		if s := specs[n]; ok && s != nil && !slices.ContainsFunc(s.Ports, func(p int) bool { return !slices.Contains(had, p) }) {
			return units.Rank{Why: "declared it first"}
		}
		return units.Rank{Tier: 1}
	})
	if len(failed) == 0 {
		l.ports = nil
		return l
	}
	out := Loaded{Specs: make([]*units.Spec, 0, len(l.Specs)), Errors: slices.Clone(l.Errors), hashes: l.hashes}
	for _, s := range l.Specs {
		if es, ok := failed[s.Name]; ok {
			out.Errors = append(out.Errors, ConfigErrors(es)...)
			continue
		}
		out.Specs = append(out.Specs, s)
	}
	return out
}

// apply carries a plan out: starts come from reconcile, stops and restarts
// begin here. The stops of a reload (and of earlier ones) finish before its
// starts begin (see blocked), so a renamed unit never clashes with its old
// self on a port. n is what of l the plan looks at (diff): a unit kept
// with the spec it has needs nothing.
func (r *Reconciler) apply(ctx context.Context, p control.Plan, l Loaded, n news) {
	r.errs = l.Errors
	r.reloads++
	for _, name := range p.Start {
		r.declareLoaded(n.specs[name], l.hashOf(n.specs[name]))
	}
	for _, s := range n.kept {
		// Fields outside the hash apply without a restart, to the
		// version the unit runs or is about to run.
		if u := r.units[s.Name]; u.stop != nil && u.stop.next != nil {
			u.stop.next.spec = s
		} else {
			if !sameDeps(u.spec, s) {
				r.reorder()
			}
			u.spec = s
		}
	}
	for _, name := range p.Restart {
		u, v := r.units[name], version{n.specs[name], l.hashOf(n.specs[name]), r.reloads}
		if u.state.active() {
			r.log.Info("unit changed; restarting", "unit", name)
			r.stopForReload(u, &v)
		} else {
			r.replace(u, v)
		}
	}
	for _, name := range p.Stop {
		u := r.units[name]
		u.stopTimer(timerBackoff)
		r.unwatchLog(u)
		if u.state.active() {
			r.log.Info("unit removed; stopping", "unit", name)
			r.stopForReload(u, nil)
		} else {
			delete(r.units, name)
			r.reorder()
		}
	}
	r.forgetUndeclared(invalidUnits(l.Errors))
	r.watchLogs(p, n)
}

// declareLoaded declares the unit of s, loaded with hash h, that the
// current units do not have (a Start of a plan): new, or declared again
// while its removal stops it, or waiting for an adopted group of its name.
func (r *Reconciler) declareLoaded(s *units.Spec, h string) {
	n := s.Name
	if u := r.units[n]; u != nil && u.external {
		if u.declared == nil {
			r.log.Warn("unit file waits: its name is taken by an adopted group", "unit", n, "pgid", u.run.group.PGID)
		}
		u.declared = &version{s, h, r.reloads}
		return
	}
	if u := r.units[n]; u != nil { // still stopping after a removal
		u.stop.removed, u.stop.next, u.stop.why = false, &version{s, h, r.reloads}, stopReload
		u.held = false // removed and declared again: a new unit
		return
	}
	held := r.heldAtDeclare(n)
	delete(r.found.held, n)
	r.units[n] = &unit{spec: s, hash: h, enabled: !s.IsJob() && !held, held: held, epoch: r.reloads}
	r.reorder()
}

// forgetUndeclared is the end of apply: a unit file that waited for an
// adopted group of its name and is gone (not merely invalid: that keeps
// the last good version) waits no more, and the runtime stops of the
// units no longer declared are forgotten (forgetStops). A unit file
// declared by this reload was given its unit's declared version (apply's
// starts), of this reload's epoch.
func (r *Reconciler) forgetUndeclared(invalid map[string]bool) {
	for _, u := range r.order() {
		if u.external && u.declared != nil && u.declared.epoch != r.reloads && !invalid[u.spec.Name] {
			u.declared = nil
		}
	}
	r.forgetStops(func(n string) bool {
		u := r.units[n]
		return invalid[n] || u != nil && !u.removed() && (!u.external || u.declared != nil)
	})
}

// stopForReload stops active unit u for the current reload: to switch to
// next, or with next nil to forget u. A stop under way is taken over; it
// keeps the earlier reload when it already is a reload's, as that
// reload's starts still wait for it (blocked).
func (r *Reconciler) stopForReload(u *unit, next *version) {
	earlier := u.state == Stopping && u.stop.forReload()
	r.stop(u, stopReload, nil)
	if !earlier {
		u.stop.epoch = r.reloads
	}
	u.stop.next, u.stop.removed = next, next == nil
}

// LoadDir adapts units.Loader.LoadDir to Options.Load. The clashes on
// ports are left to the reconciler, which knows which of two units it has
// (settlePorts): the Loaded holds both units of each (after the others, in
// name order) and not the error LoadDir gave the one it failed. Its specs
// are the Dir's, shared with l's Cache.
func LoadDir(l *units.Loader, dir string) func(context.Context) (Loaded, error) {
	return func(context.Context) (Loaded, error) {
		d, err := l.LoadDir(dir)
		if err != nil {
			return Loaded{}, err
		}
		out := Loaded{ports: d.Ports, Specs: d.Specs()}
		var es units.Errors
		for n, fe := range d.Failed {
			if s := d.Contested[n]; s != nil {
				out.Specs = append(out.Specs, s)
			} else {
				es = append(es, fe...)
			}
		}
		slices.SortFunc(out.Specs[len(d.Units):], func(a, b *units.Spec) int { return strings.Compare(a.Name, b.Name) })
		es.Sort()
		out.Errors = ConfigErrors(es)
		return out, nil
	}
}

// ConfigErrors lists the errors of package units in err (an Errors or an
// *Error), as Loaded keeps them; any other error becomes one with no file
// and no position.
func ConfigErrors(err error) []*units.Error {
	if err == nil {
		return nil
	}
	var es units.Errors
	if errors.As(err, &es) {
		return slices.Clone(es)
	}
	var e *units.Error
	if errors.As(err, &e) {
		return []*units.Error{e}
	}
	return []*units.Error{{Msg: err.Error(), Err: err}}
}

// wireErrors is es in the form status and reload plans carry: the one
// place the reconciler's config errors become control.ConfigError.
func wireErrors(es []*units.Error) []control.ConfigError {
	out := make([]control.ConfigError, 0, len(es))
	for _, e := range es {
		out = append(out, wireError(e))
	}
	return out
}

func wireError(e *units.Error) control.ConfigError {
	return control.ConfigError{File: e.File, Line: e.Line, Column: e.Column, Message: e.Msg}
}
