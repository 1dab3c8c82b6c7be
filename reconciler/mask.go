package reconciler

import (
	"context"
	"fmt"

	"github.com/hermes-units/hermes/control"
)

// Masked units (`hermesctl mask`): nothing starts them until Unmask. A
// disabled unit is kept stopped and Enable brings it back; a masked one
// refuses even that, and a unit that requires it refuses to start, until
// Unmask. Masking is a mark only (a running unit runs on, as after
// `systemctl mask`) unless asked to stop it too (now, as `systemctl mask
// --now`). The set lives in r.masked and, with Options.Holds, in the
// state directory (holds.Holds.Masked): kept across restarts of hermesd
// and reboots.

var _ control.Masker = (*Reconciler)(nil)

// Mask marks the unit masked and, with now, stops it and returns once its
// group is empty, as Stop does. The mark is written to the state directory
// first: when it cannot be, Mask changes nothing and returns why. An
// adopted group with no unit file cannot be masked (control.ErrConflict).
func (r *Reconciler) Mask(ctx context.Context, name string, now bool) error {
	return r.hold(ctx, name, "mask", "masked", &r.masked, now)
}

// Unmask undoes Mask (nothing to undo: nothing changes). The unit is not
// started: one not running stays stopped as after Stop, until Start within
// this boot (a job fires on its schedule again). A name masked but no
// longer declared may be unmasked: its mark goes. The change is written
// to the state directory first.
func (r *Reconciler) Unmask(ctx context.Context, name string) error {
	return r.doErr(ctx, func(context.Context) error {
		u, err := r.unmarked(name, r.masked)
		if err != nil || !r.masked[name] {
			return err
		}
		// Stopped as by Stop, until Start.
		keep := u != nil && !u.spec.IsJob() && !u.state.active() && !r.disabled[name]
		if err := r.setMark(name, "unmasked", &r.masked, false, keep); err != nil {
			return err
		}
		if keep {
			u.held, u.enabled = true, false
		}
		return nil
	})
}

// refuseMasked is the error of a start of name while it, or a unit it
// requires (directly or through the units those require), is masked.
func (r *Reconciler) refuseMasked(name string) error {
	if r.masked[name] {
		return fmt.Errorf("unit %s is masked: nothing starts it; `hermesctl unmask %s` undoes it: %w", name, name, control.ErrConflict)
	}
	if d := r.maskedRequired(name, map[string]bool{}); d != "" {
		return fmt.Errorf("unit %s requires %s, which is masked: nothing starts it; `hermesctl unmask %s` undoes it: %w", name, d, d, control.ErrConflict)
	}
	return nil
}

// maskedRequired is the first unit name requires, directly or through the
// units it requires, that is masked; "" when none.
func (r *Reconciler) maskedRequired(name string, seen map[string]bool) string {
	seen[name] = true
	u := r.units[name]
	if u == nil {
		return ""
	}
	for _, d := range u.spec.Requires {
		if seen[d] {
			continue
		}
		if r.masked[d] {
			return d
		}
		if m := r.maskedRequired(d, seen); m != "" {
			return m
		}
	}
	return ""
}
