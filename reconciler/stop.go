package reconciler

import (
	"context"

	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
)

// A stop is done once the unit's group is empty: what follows it (a
// reload's new version, a restart) may start then. The spawner's Stop
// returns later than that: after the group is empty it also drops the
// group's registration and waits for its ledger entry to be removed, a
// ledger write with an fsync (most of a reload's stop, 20 ms and more on a
// loaded disk, against 2 ms for a TERM-obeying process to exit). So while
// Stop runs, the leader's exit, an event, is also awaited: if the group
// has no member left then (Daemons.Members, which in pgroup mode looks for
// escapees first, so a daemon that left the group is counted; the common
// case is a leader alone), the stop is done at once (emptiedEvent);
// otherwise Stop's return says when. Stop's own result, the stopDoneEvent
// that follows, is then stale; an error it carries is logged.
//
// Shutdown does not take the early word: hermesd's clean stop ends when
// every Stop has returned, its ledger writes included; and its stops do
// not look (a look per unit would only compete with the stops).

// emptiedEvent: the group of a stopping unit was found empty at its
// leader's exit, before Stop returned.
type emptiedEvent struct {
	name string
	gen  uint64
}

// awaitEmptied starts, in r.wg, the watch of a stop's early end: p is the
// unit's process (nil for an adopted group: no exit event), main its
// forking main process (non-zero: the leader is long gone and StopMain
// says when the rest is), returned closed when Stop has returned. It
// needs a spawner that lists a group's members (Daemons). Run's goroutine.
func (r *Reconciler) awaitEmptied(name string, gen uint64, g supervisor.Group, p Process, main proc.Identity, returned <-chan struct{}) {
	d, ok := r.opt.Spawner.(Daemons)
	if !ok || p == nil || !main.IsZero() || r.shutting {
		return
	}
	r.wg.Go(func() {
		select {
		case <-p.Done():
		case <-returned:
			return
		}
		if len(d.Members(g)) == 0 {
			r.post(emptiedEvent{name, gen})
		}
	})
}

// onEmptied ends the stop of ev's unit, unless it is stale, Stop has
// returned already, or hermesd is stopping.
func (r *Reconciler) onEmptied(ctx context.Context, ev emptiedEvent) {
	u := r.units[ev.name]
	if u == nil || u.gen != ev.gen || u.state != Stopping || r.shutting {
		return
	}
	r.stopped(ctx, u, nil)
}

// onStopDone applies Stop's result, or logs the error of one that came
// after the group was found empty (emptiedEvent): the unit has moved on.
func (r *Reconciler) onStopDone(ctx context.Context, ev stopDoneEvent) {
	u := r.units[ev.name]
	if u == nil || u.gen != ev.gen || u.state != Stopping {
		if ev.err != nil {
			r.log.Warn("unit stopped; the stop's bookkeeping failed after its group was empty", "unit", ev.name, "err", ev.err)
		}
		return
	}
	r.stopped(ctx, u, ev.err)
}
