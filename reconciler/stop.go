package reconciler

import (
	"context"
	"errors"

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
//
// A StopBatcher's done for a group comes once the group is empty (its
// release, with the ledger write, comes once the whole batch is done,
// before StopAll returns, which Run's end waits for): the early word
// matters only with a plain Stop.

// Stops are begun in batches. stop queues each stop a pass begins
// (r.batch); once the pass is over, Run hands the whole batch to the
// spawner at once (dispatchStops): with a StopBatcher (the supervisor's
// StopAll) every group of the batch gets its signal before any is waited
// for, so that hermesd's clean stop of a hundred units costs one round of
// signals and the units' own exits, not a hundred signal-and-wait turns
// competing for the machine. A unit's stop is still done on its own
// (stopDoneEvent for each group as it empties): a unit that ignores its
// signal holds back only the units below it in dependency order, which
// stop in a later pass, once it is done.

// StopBatcher is a Spawner that stops many groups at once
// (supervisor.Owner.StopAll): signalled is called once every group has had
// its signal, before any is waited for; done(i, err) is called for
// orders[i] once its group is empty (nil) or its stop failed, from the
// batcher's goroutines; StopAll returns once every done has returned and
// the batch's groups are released, with the release's error (the ledger
// write of them all).
type StopBatcher interface {
	StopAll(ctx context.Context, orders []supervisor.StopOrder, signalled func(), done func(i int, err error)) error
}

// pendingStop is a stop begun in this pass and not yet handed to the
// spawner: the unit's name and gen, its process (nil for an adopted
// group), and what to do (a forking unit's main process in order.Main).
type pendingStop struct {
	name   string
	gen    uint64
	p      Process
	cancel context.CancelFunc // ends the run's context; nil when none
	order  supervisor.StopOrder
}

// dispatchStops hands the stops queued by this pass to the spawner: in one
// StopAll with a StopBatcher, else one Stop (StopMain, for a forking unit)
// each, all in r.wg. What else a stop does, ending its run's context (which
// wakes the goroutines that watch the run) and its log line, comes once the
// batch's signals are sent, so as not to delay them; with a StopBatcher, on
// a goroutine of its own, so as not to delay the waits for the groups'
// ends either (StopAll waits for none before signalled returns: at 2000
// units, the contexts and lines took 10 to 100 ms, during which no group
// that had ended was looked at). Run's goroutine, after each pass.
func (r *Reconciler) dispatchStops() {
	batch := r.batch
	r.batch = nil
	if len(batch) == 0 {
		return
	}
	ctx := r.base
	returned := make([]chan struct{}, len(batch))
	for i, s := range batch {
		returned[i] = make(chan struct{})
		r.awaitEmptied(s.name, s.gen, s.order.Group, s.p, s.order.Main, returned[i]) // the stop may be done before Stop returns
	}
	begun := func() {
		for _, s := range batch {
			if s.cancel != nil {
				s.cancel()
			}
			o := s.order
			r.log.Info("stopping unit", "unit", s.name, "pgid", o.Group.PGID, "signal", o.Signal, "grace", o.Grace)
		}
	}
	if b, ok := r.opt.Spawner.(StopBatcher); ok {
		orders := make([]supervisor.StopOrder, len(batch))
		for i, s := range batch {
			orders[i] = s.order
		}
		r.wg.Go(func() {
			err := b.StopAll(ctx, orders, func() { r.wg.Go(begun) }, func(i int, err error) {
				close(returned[i])
				r.post(stopDoneEvent{batch[i].name, batch[i].gen, err})
			})
			switch {
			case err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()):
				// hermesd's clean stop: Run ended once the groups were
				// empty, and with it the bookkeeping that follows (the
				// ledger entries of dead groups are pruned at the next
				// write). Nothing went wrong.
				r.log.Debug("units stopped as hermesd stops; their release was left to the ledger's pruning", "units", len(orders))
			case err != nil:
				// The units are stopped (their groups are empty): only the
				// bookkeeping that follows failed.
				r.log.Warn("units stopped; the release of their groups failed", "units", len(orders), "err", err)
			}
		})
		return
	}
	d, _ := r.opt.Spawner.(Daemons)
	for i, s := range batch {
		r.wg.Go(func() {
			var err error
			o := s.order
			if d != nil && !o.Main.IsZero() {
				err = d.StopMain(ctx, o.Group, o.Main, o.Signal, o.Grace) // forking: the stop signal to the main process, KILL for the rest
			} else {
				err = r.opt.Spawner.Stop(ctx, o.Group, o.Signal, o.Grace)
			}
			close(returned[i])
			r.post(stopDoneEvent{s.name, s.gen, err})
		})
	}
	begun()
}

// emptiedEvent: the group of a stopping unit was found empty at its
// leader's exit, before Stop returned.
type emptiedEvent struct {
	name string
	gen  uint64
}

// awaitEmptied starts, in r.wg, the watch of a stop's early end: p is the
// unit's process (nil for an adopted group: no exit event), main its
// forking main process (non-zero: the leader is long gone and StopMain
// says when the rest is), returned closed when Stop has returned (for a
// batch, when its done was called for the group). It needs a spawner that
// lists a group's members (Daemons). Run's goroutine.
func (r *Reconciler) awaitEmptied(name string, gen uint64, g supervisor.Group, p Process, main proc.Identity, returned <-chan struct{}) {
	d, ok := r.opt.Spawner.(Daemons)
	if !ok || p == nil || !main.IsZero() || r.shut != nil {
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
	if u == nil || u.gen != ev.gen || u.state != Stopping || r.shut != nil {
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
