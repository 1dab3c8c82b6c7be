package reconciler

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/holds"
)

// Units kept stopped, by name, whatever their files say:
//
//   - disabled (`hermesctl disable`): stopped, and not started by a reload,
//     an edit, Start, a job's schedule or a restart of hermesd, until
//     Enable; kept across reboots.
//   - stopped by command (`hermesctl stop`, unit.held): not started by a
//     reload or an edit until Start; kept across restarts of hermesd, clean
//     or not, within the boot (Options.Holds carries the boot id), and
//     forgotten when the unit's file is removed, as a unit declared again
//     is new.
//
// Both sets live in r.disabled and r.stops (Run's goroutine) and, with
// Options.Holds, in the state directory: read once in Run before the first
// load, written at each change. Names need not be declared: a unit whose
// file is invalid at hermesd's start keeps its hold for when it loads.

var _ control.Enabler = (*Reconciler)(nil)

// loadHolds reads Options.Holds into r.disabled and r.stops (Run, before
// the first load). A file that is not trusted is set aside by the Store,
// and the units start as if it were empty: the log says so.
func (r *Reconciler) loadHolds() {
	if r.opt.Holds == nil {
		return
	}
	h, err := r.opt.Holds.Load()
	if err != nil {
		r.log.Warn("disabled and stopped units not restored", "err", err)
	}
	for _, n := range h.Disabled {
		r.disabled[n] = true
	}
	for _, n := range h.Masked {
		r.masked[n] = true
	}
	for _, n := range h.Stopped {
		r.stops[n] = true
	}
	if len(h.Disabled)+len(h.Masked)+len(h.Stopped) > 0 {
		r.log.Info("units kept stopped", "disabled", h.Disabled, "masked", h.Masked, "stopped", h.Stopped, "file", r.opt.Holds.Path())
	}
	if len(h.Forgotten) > 0 {
		r.log.Info("stops of an earlier boot forgotten: the units start", "units", h.Forgotten)
	}
}

// saveHolds writes r.disabled, r.masked and r.stops to Options.Holds; nil
// without one.
func (r *Reconciler) saveHolds() error {
	if r.opt.Holds == nil {
		return nil
	}
	return r.opt.Holds.Save(holds.Holds{
		Disabled: slices.Sorted(maps.Keys(r.disabled)),
		Masked:   slices.Sorted(maps.Keys(r.masked)),
		Stopped:  slices.Sorted(maps.Keys(r.stops)),
	})
}

// setStop records (on) or clears the runtime stop of name. A failed write
// is logged, not returned: the stop or start itself is done, and only a
// restart of hermesd would not know of it.
func (r *Reconciler) setStop(name string, on bool) {
	if r.stops[name] == on {
		return
	}
	if on {
		r.stops[name] = true
	} else {
		delete(r.stops, name)
	}
	if err := r.saveHolds(); err != nil {
		r.log.Warn("runtime stop not saved: a restart of hermesd will not know of it", "unit", name, "stopped", on, "err", err)
	}
}

// forgetStops drops the runtime stops of units that are no longer declared
// (their file removed, not merely invalid: declared says) after a load:
// declared again, a unit is new and starts.
func (r *Reconciler) forgetStops(declared func(unit string) bool) {
	var gone []string
	for n := range r.stops {
		if !declared(n) {
			gone = append(gone, n)
		}
	}
	if len(gone) == 0 {
		return
	}
	for _, n := range gone {
		delete(r.stops, n)
	}
	if err := r.saveHolds(); err != nil {
		r.log.Warn("stops of removed units not forgotten on disk", "units", gone, "err", err)
	}
}

// heldAtDeclare reports whether a newly declared unit named n starts
// stopped: by command, disabled, or for a released group a dead owner left.
func (r *Reconciler) heldAtDeclare(n string) bool {
	return r.stops[n] || r.disabled[n] || r.masked[n] || r.found.held[n]
}

// fileUnit is the unit of a unit file named name, for verb (disable,
// mask): an unknown unit is control.ErrUnknownUnit, an adopted group with
// no file control.ErrConflict. The loop's goroutine.
func (r *Reconciler) fileUnit(name, verb string) (*unit, error) {
	u, err := r.declared(name)
	if err == nil && u.external {
		return nil, fmt.Errorf("unit %s is an adopted group, not a unit file: there is nothing to %s; stop it instead: %w", name, verb, control.ErrConflict)
	}
	return u, err
}

// Disable stops the unit, as Stop does (it returns once the group is
// empty), and keeps it stopped until Enable: across reloads, edits of its
// file, Start (refused), its schedule (a job does not fire), and restarts
// of hermesd. The choice is written to the state directory before
// anything is stopped: when it cannot be, Disable changes nothing and
// returns why. An adopted group with no unit file cannot be disabled
// (control.ErrConflict): stop it.
func (r *Reconciler) Disable(ctx context.Context, name string) error {
	return r.hold(ctx, name, "disable", "disabled", &r.disabled, true)
}

// hold marks the unit of the unit file named name in *marks (&r.disabled
// for Disable, &r.masked for Mask) and drops its runtime stop, which the
// mark says more than; with stop it then stops the unit and returns once
// its group is empty, as Stop does. The marks are written to the state
// directory first: when they cannot be, nothing changes and the error
// says why. verb and done name the act in errors and the log.
func (r *Reconciler) hold(ctx context.Context, name, verb, done string, marks *map[string]bool, stop bool) error {
	return r.doAwait(ctx, func(context.Context) (<-chan error, error) {
		u, err := r.fileUnit(name, verb)
		if err != nil {
			return nil, err
		}
		if !(*marks)[name] {
			if err := r.setMark(name, done, marks, true, false); err != nil {
				return nil, err
			}
		}
		if !stop {
			return nil, nil
		}
		return r.stopAsked(u, stopCommand), nil
	})
}

// setMark sets (on) or clears name's mark in *marks (&r.disabled,
// &r.masked). Set, its runtime stop goes: the mark says more. Cleared,
// with stopped it is kept stopped as by Stop (a runtime stop), else its
// runtime stop stays as it is. The holds are written first, and kept only
// once written: when they cannot be, nothing changes and the error says
// why. done names the change in the error and the log.
func (r *Reconciler) setMark(name, done string, marks *map[string]bool, on, stopped bool) error {
	oldMarks, oldStops := *marks, r.stops
	*marks, r.stops = maps.Clone(oldMarks), maps.Clone(oldStops)
	if on {
		(*marks)[name] = true
		delete(r.stops, name)
	} else {
		delete(*marks, name)
		if stopped {
			r.stops[name] = true
		}
	}
	if err := r.saveHolds(); err != nil {
		*marks, r.stops = oldMarks, oldStops
		return fmt.Errorf("unit %s not %s: %w", name, done, err)
	}
	r.log.Info("unit "+done, "unit", name)
	return nil
}

// unmarked is the unit Enable or Unmask acts on: the declared unit named
// name, or nil when none is but marks (r.disabled, r.masked) still names
// it, whose mark may go; neither is control.ErrUnknownUnit.
func (r *Reconciler) unmarked(name string, marks map[string]bool) (*unit, error) {
	u, err := r.declared(name)
	if err != nil && marks[name] {
		return nil, nil
	}
	return u, err
}

// Enable undoes Disable (nothing to undo: nothing changes). With start, the
// unit is then started as by Start, and Enable returns the start's error; a
// job is not run, but fires on its schedule again. Without, the unit stays
// stopped as after Stop: until Start, within this boot. The change is
// written to the state directory first: when it cannot be, Enable changes
// nothing and returns why. A name that is disabled but no longer declared
// may be enabled: its mark goes.
func (r *Reconciler) Enable(ctx context.Context, name string, start bool) error {
	// start is read on Run's goroutine: the answer takes another name.
	startNow, err := ask(ctx, r, func(context.Context) (bool, error) {
		u, err := r.unmarked(name, r.disabled)
		if err != nil {
			return false, err
		}
		if u != nil && u.external {
			return false, fmt.Errorf("unit %s is an adopted group, not a unit file: there is nothing to enable: %w", name, control.ErrConflict)
		}
		if err := r.refuseMasked(name); err != nil {
			return false, err
		}
		if r.disabled[name] {
			// Stopped as by Stop, until Start (below, or later).
			if err := r.setMark(name, "enabled", &r.disabled, false, u != nil && !u.spec.IsJob()); err != nil {
				return false, err
			}
		}
		return start && u != nil && !u.spec.IsJob(), nil
	})
	if err != nil || !startNow {
		return err
	}
	// Apart from the enable: Start waits on Run's goroutine itself. Until
	// it runs, the unit is stopped as by Stop, which Start undoes.
	return r.Start(ctx, name)
}

// refuseDisabled is the error of a start of name while it is disabled.
func (r *Reconciler) refuseDisabled(name string) error {
	if !r.disabled[name] {
		return nil
	}
	return fmt.Errorf("unit %s is disabled; `hermesctl enable %s` starts it: %w", name, name, control.ErrConflict)
}

// stateWord is u's state in status and events: an inactive unit says why
// it stays so, when by choice. A job stopped by command fires again on its
// schedule: it is merely inactive. A unit waiting for a unit it requires
// that is kept stopped (stop, disable) is stopped with it, as systemd
// stops what Requires= a stopped unit (and unlike systemd it starts again
// with it: heldWith).
func (r *Reconciler) stateWord(u *unit) control.UnitState {
	if u.state == Waiting && r.heldWith(u, nil) != "" {
		return control.StateStopped
	}
	if u.state == Inactive && !u.external {
		switch {
		case r.disabled[u.spec.Name]:
			return control.StateDisabled
		case r.masked[u.spec.Name]:
			return control.StateStopped
		case u.held && !u.spec.IsJob():
			return control.StateStopped
		}
	}
	return u.state.word()
}

// heldWith is the name of a unit u requires, directly or through the
// units it requires, that is kept stopped on purpose (stopped by command,
// disabled): u waits for it and starts again with it. "" when none.
func (r *Reconciler) heldWith(u *unit, seen map[string]bool) string {
	if seen == nil {
		seen = map[string]bool{}
	}
	seen[u.spec.Name] = true
	for _, d := range u.spec.Requires {
		dep := r.units[d]
		if dep == nil || seen[d] {
			continue
		}
		if dep.state == Inactive && (dep.held || r.disabled[d] || r.masked[d]) {
			return d
		}
		if dep.state == Waiting && r.heldWith(dep, seen) != "" {
			return d
		}
	}
	return ""
}
