package reconciler

import (
	"context"
	"fmt"
	"slices"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/units"
)

// What the control API's actions report beyond success (control.Actor),
// and what status tells a client that waits for a start's outcome.

var _ control.Actor = (*Reconciler)(nil)

// Act does what Start, Stop or Restart does, and says what it did: for a
// stop, the units that require the unit (directly or through each other)
// and were stopped with it, whose groups are empty too when Act returns;
// for a start or a restart of a job, the run under way once it was begun
// ("" when it has already ended: status then shows its result).
func (r *Reconciler) Act(ctx context.Context, name string, a control.Action) (control.ActionResult, error) {
	res := control.ActionResult{Unit: name, Action: string(a)}
	var err error
	switch a {
	case control.ActionStart:
		if err = r.Start(ctx, name); err == nil {
			res.RunID, err = r.runningRun(ctx, name)
		}
	case control.ActionRestart:
		if err = r.Restart(ctx, name); err == nil {
			res.RunID, err = r.runningRun(ctx, name)
		}
	case control.ActionStop:
		var up []string
		if up, err = r.requiring(ctx, name); err == nil {
			if err = r.Stop(ctx, name); err == nil {
				res.Stopped, err = r.takenDown(ctx, up)
			}
		}
	default:
		err = fmt.Errorf("%w: unknown action %q (start, stop or restart)", control.ErrBadRequest, a)
	}
	return res, err
}

// runOf is the run of job u under way, "" when u is no job or is not
// running (Run's goroutine).
func (r *Reconciler) runOf(u *unit) string {
	if !u.spec.IsJob() || !u.state.active() {
		return ""
	}
	if j := r.jobs.m[u.spec.Name]; j != nil && j.run != nil {
		return j.run.id
	}
	return ""
}

// runningRun is runOf the unit name, read on Run's goroutine.
func (r *Reconciler) runningRun(ctx context.Context, name string) (string, error) {
	return ask(ctx, r, func(context.Context) (string, error) {
		if u := r.units[name]; u != nil {
			return r.runOf(u), nil
		}
		return "", nil
	})
}

// requiring names the units that require the unit name, directly or
// through each other, and are starting or running: those a stop of it
// takes down (the pass after the stop stops them, reconcile). In
// dependency order.
func (r *Reconciler) requiring(ctx context.Context, name string) ([]string, error) {
	return ask(ctx, r, func(context.Context) ([]string, error) {
		var up []string
		below := map[string]bool{name: true}
		for _, u := range r.order() {
			if u.spec.Name == name || u.external || !slices.ContainsFunc(u.spec.Requires, func(d string) bool { return below[d] }) {
				continue
			}
			below[u.spec.Name] = true
			if u.state == Starting || u.state == Running {
				up = append(up, u.spec.Name)
			}
		}
		return up, nil
	})
}

// takenDown waits until the groups of those units of up that the stop
// took down are empty, and returns their names. A unit of up still
// starting or running was not taken down (a reload is replacing it) and
// is left out.
func (r *Reconciler) takenDown(ctx context.Context, up []string) ([]string, error) {
	var taken []string
	var waits []<-chan error
	if err := r.do(ctx, func(context.Context) {
		for _, n := range up {
			u := r.units[n]
			if u == nil || u.state == Starting || u.state == Running {
				continue
			}
			taken = append(taken, n)
			if u.state == Stopping {
				waits = append(waits, u.stop.join())
			}
		}
	}); err != nil {
		return nil, err
	}
	for _, w := range waits {
		if err := r.await(ctx, w); err != nil {
			return taken, err
		}
	}
	return taken, nil
}

// describe fills the fields of cu that a client waiting for a start reads
// (control.Unit: Type, Probe, After, Timeouts) from s, the unit's spec.
func describe(cu *control.Unit, s *units.Spec) {
	cu.Type = typeOf(s)
	cu.Probe = probeWords(s.Ready)
	cu.RemainAfterExit = s.RemainAfter
	cu.After = s.After
	t := &control.Timeouts{Start: s.Timeouts.Start, Stop: s.Timeouts.Stop, RuntimeMax: s.Timeouts.RuntimeMax}
	if t.Stop <= 0 {
		t.Stop = DefaultStopGrace
	}
	if s.Type == units.Oneshot {
		t.Start = 0 // a oneshot has no start timeout (start): runtime_max bounds it
	}
	cu.Timeouts = t
}

// probeWords is a readiness probe as status shows it; "" for none.
func probeWords(rd units.Ready) string {
	switch {
	case rd.TCP != "":
		return "tcp " + rd.TCP
	case rd.HTTP != "":
		return "http " + rd.HTTP
	case rd.Log != "":
		return "log /" + rd.Log + "/"
	case rd.Notify:
		return "notify"
	}
	return ""
}
