package reconciler

import (
	"context"

	"github.com/hermes-units/hermes/control"
)

var _ control.FailureResetter = (*Reconciler)(nil)

// ResetFailed forgets the failure of the unit name, as systemctl
// reset-failed does: a failed unit (left so by its restart policy, its
// start limit, a held port…) or one backing off towards a restart becomes
// inactive, its error, restart count, backoff and start-limit history
// gone, and the restart it waited for cancelled. It is not started: Start
// does that, or the next hermesd. A unit that is not failed is left as it
// is; an unknown one is control.ErrUnknownUnit.
func (r *Reconciler) ResetFailed(ctx context.Context, name string) error {
	return r.doErr(ctx, func(context.Context) error {
		u, err := r.declared(name)
		if err != nil || u.state != Failed && u.state != BackingOff {
			return err
		}
		u.stopTimer(timerBackoff)
		u.state, u.enabled, u.gen = Inactive, false, r.nextGen()
		u.err, u.restarts, u.attempt, u.starts = nil, 0, 0, nil
		r.log.Info("unit's failure reset", "unit", name)
		return nil
	})
}
