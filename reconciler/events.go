package reconciler

import (
	"errors"
	"slices"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/events"
	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
)

// The reconciler reports what changed as events (Options.Publish) the way
// it acts: level-based. After every step of Run, publishChanges compares
// each unit (during hermesd's clean stop, each the step touched: see
// shutdown.go) with what it last published and reports the difference: its
// state word, readiness, a restart, adoption; and released groups and
// config errors that appeared. So no state change is missed whichever code
// path made it, and the events of one step come in dependency order. A
// state held only inside one step (stopping and started again at once)
// is not seen: the event says where the unit ended up, and why.
//
// Reloads are reported where they are applied (publishReload), before the
// unit changes they cause.

// seen is what publishChanges last reported of one unit.
type seen struct {
	known    bool // reported once
	state    control.UnitState
	ready    bool
	restarts int
	adopted  bool
	pid      int
}

// publisher is the reconciler's memory of what it published, apart from
// each unit's own (unit.pub). Owned by Run's goroutine.
type publisher struct {
	released map[int]bool    // pgids of released groups reported
	errs     map[string]bool // config errors reported, by their text
	errsOf   []*units.Error  // the load's errors errs was made from
}

func (r *Reconciler) publish(e events.Event) {
	if r.opt.Publish != nil {
		r.opt.Publish(e)
	}
}

// publishChanges reports the differences since its last call of the
// units us, in their order (Run's goroutine, after each step: the units
// the step may have changed, see passed).
func (r *Reconciler) publishChanges(us []*unit) {
	if r.opt.Publish == nil {
		return
	}
	p := &r.pub
	if p.released == nil {
		p.released, p.errs = map[int]bool{}, map[string]bool{}
	}
	r.publishConfigErrors(p)
	r.publishReleased(p)
	now := time.Now()
	for _, u := range us {
		r.publishUnit(u, now)
	}
}

// publishConfigErrors reports the config errors not reported yet, and
// forgets the fixed ones so that they are reported again if they come back.
func (r *Reconciler) publishConfigErrors(p *publisher) {
	if slices.Equal(p.errsOf, r.errs) {
		return // the same load's errors: reported already
	}
	p.errsOf = r.errs
	now := make(map[string]bool, len(r.errs))
	for _, e := range r.errs {
		k := e.Error()
		now[k] = true
		if !p.errs[k] {
			r.publish(events.Event{Kind: events.ConfigError, Error: &events.FileError{File: e.File, Line: e.Line, Column: e.Column, Message: e.Msg}})
		}
	}
	p.errs = now // a fixed error is forgotten: reported again if it comes back
}

// publishReleased reports the released groups not reported yet, and
// forgets those no longer listed.
func (r *Reconciler) publishReleased(p *publisher) {
	for _, s := range r.released {
		if !p.released[s.Group.PGID] {
			p.released[s.Group.PGID] = true
			r.publish(events.Event{Kind: events.Released, Unit: s.Unit, PID: s.Group.Leader.PID})
		}
	}
	for pg := range p.released {
		if !slices.ContainsFunc(r.released, func(s Survivor) bool { return s.Group.PGID == pg }) {
			delete(p.released, pg)
		}
	}
}

// publishUnit reports what changed of u since it was last seen, in this
// order: adopted, restarted, a new state, ready; and remembers u as it is.
func (r *Reconciler) publishUnit(u *unit, now time.Time) {
	name := u.spec.Name
	was, known := u.pub, u.pub.known
	if !known {
		was = seen{state: Inactive.word()}
	}
	now1 := seen{known: true, state: r.stateWord(u), ready: u.state == Running, restarts: u.restarts, adopted: u.adopted()}
	if u.state.active() {
		now1.pid = u.run.group.Leader.PID
	}
	if now1 == was {
		return
	}
	u.pub = now1
	if now1.adopted && (!was.adopted || was.pid != now1.pid) {
		r.publish(events.Event{Kind: events.Adopted, Unit: name, PID: now1.pid})
	}
	if now1.restarts > was.restarts && known {
		cause := errors.Unwrap(u.err) // afterRun's backingOff: the failed run's cause
		if cause == nil {
			cause = u.err
		}
		r.publish(events.Event{Kind: events.UnitRestart, Unit: name, Restarts: now1.restarts, Cause: causeClass(cause), Reason: errText(cause)})
	}
	if now1.state != was.state {
		r.publish(events.Event{Kind: events.UnitState, Unit: name, State: now1.state, From: was.state,
			Reason: r.reason(u), PID: now1.pid, Restarts: now1.restarts})
	}
	if now1.ready && !was.ready && !now1.adopted {
		r.publish(events.Event{Kind: events.UnitReady, Unit: name, PID: now1.pid, Ready: true, Duration: now.Sub(u.run.started)})
	}
}

// reason says why u is where it is, for a unit.state event.
func (r *Reconciler) reason(u *unit) string {
	switch u.state {
	case Waiting:
		return u.waitMsg
	case Stopping:
		switch u.stop.why {
		case stopCommand:
			if r.disabled[u.spec.Name] {
				return "disabled by command"
			}
			if r.masked[u.spec.Name] {
				return "masked by command"
			}
			return "stopped by command"
		case stopRestart:
			return "restarted by command"
		case stopReload:
			if u.stop.removed {
				return "removed from the units directory"
			}
			return "unit file changed"
		case stopRequires:
			return "a required unit went down"
		case stopShutdown:
			return "hermesd is stopping"
		case stopFailure:
			return errText(u.stop.cause)
		}
	case Starting, Running:
		return "" // u.err is the last run's, shown by status; not why it runs
	case Inactive:
		switch {
		case r.disabled[u.spec.Name] && !u.external:
			return "disabled by command"
		case r.masked[u.spec.Name] && !u.external:
			return "masked by command"
		case u.held:
			return "stopped by command"
		}
	}
	return errText(u.err)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// causeClass is the events.Cause* of a failed run's cause.
func causeClass(err error) string {
	var xe *supervisor.ExitError
	var ec exitCause
	switch {
	case errors.Is(err, ErrStartTimeout):
		return events.CauseStartTimeout
	case errors.Is(err, ErrWatchdog):
		return events.CauseWatchdog
	case errors.Is(err, ErrRuntimeMax):
		return events.CauseRuntimeMax
	case errors.Is(err, ErrBudgetExceeded):
		return events.CauseBudget
	case errors.As(err, &xe) && xe.Signal != 0:
		return events.CauseSignal
	case errors.Is(err, errExitUnknown), errors.As(err, &xe), errors.As(err, &ec):
		return events.CauseExit
	case errors.Is(err, errProbe):
		return events.CauseReadiness
	case errors.As(err, new(spawnFailed)):
		return events.CauseSpawn
	}
	return events.CauseOther
}

// errProbe wraps a failed readiness probe's error.
var errProbe = errors.New("readiness probe")

// spawnFailed marks a run that could not be started; its text is err's.
type spawnFailed struct{ err error }

func (e spawnFailed) Error() string { return e.err.Error() }
func (e spawnFailed) Unwrap() error { return e.err }

// publishReload reports a reload (Run's goroutine, right after apply, or
// from the reader when the units could not be read): its plan, how long
// from the start of the read, and whether it was applied.
func (r *Reconciler) publishReload(p control.Plan, began time.Time, err error) {
	e := events.Event{Kind: events.Reload, Duration: time.Since(began), Outcome: "applied"}
	if err != nil {
		e.Outcome, e.Reason = "failed", err.Error()
	} else {
		e.Plan = &events.Plan{Start: orEmpty(p.Start), Stop: orEmpty(p.Stop), Restart: orEmpty(p.Restart), Keep: orEmpty(p.Keep)}
	}
	r.publish(e)
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
