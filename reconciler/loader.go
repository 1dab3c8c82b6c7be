package reconciler

import (
	"context"
	"errors"
	"time"

	"github.com/hermes-units/hermes/control"
)

// Reading the units directory (Options.Load) parses every unit file: tens
// of milliseconds with hundreds of units. It runs off Run's goroutine, so
// that status and the other control calls, exits and timers are not held
// while a reload reads; only the diff and its application run on Run's
// goroutine.
//
// Reads and applications are serialised by load.mu: each reader (Run's first
// load, followChanges, Reload) holds it from its read until Run has applied
// the result. So results are applied in the order they were read, and an
// older read never lands after a newer one: no edit is undone by a late
// reload.

// followChanges reloads on each value of Options.Changes until ctx ends. It
// is started by Run once the first load is applied, and joined by Run's
// wait group.
func (r *Reconciler) followChanges(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.opt.Changes:
		}
		load := r.opt.Load
		if r.opt.LoadChanges != nil {
			load = r.opt.LoadChanges
		}
		if _, err := r.reload(ctx, load, false, false); err != nil && ctx.Err() == nil && !errors.Is(err, ErrStopped) {
			r.log.Error("reload: units not read; running units kept", "err", err)
		}
	}
}

// reload reads the units with load (Options.Load or LoadChanges) and,
// unless dryRun, applies the plan on Run's goroutine. It fails with
// ErrStopped once hermesd is stopping. asked: a caller waits for the plan
// (Reload), and the statuses it asks next show it applied
// (statusSnaps.answered); false: a change of the files (followChanges).
func (r *Reconciler) reload(ctx context.Context, load func(context.Context) (Loaded, error), dryRun, asked bool) (control.Plan, error) {
	select {
	case <-r.done:
		return control.Plan{}, ErrStopped
	default:
	}
	r.load.mu.Lock()
	defer r.load.mu.Unlock()
	began := time.Now()
	l, err := load(ctx)
	if err != nil {
		if !dryRun {
			r.publishReload(control.Plan{}, began, err)
		}
		return control.Plan{}, err
	}
	r.hashLoaded(&l, !dryRun) // here, not on Run's goroutine
	var p control.Plan
	if e := r.call(ctx, asked, func(ctx context.Context) { p, err = r.applyLoaded(ctx, l, dryRun, asked, began) }); e != nil {
		return control.Plan{}, e
	}
	return p, err
}

// applyLoaded is reload's part on Run's goroutine.
func (r *Reconciler) applyLoaded(ctx context.Context, l Loaded, dryRun, asked bool, began time.Time) (control.Plan, error) {
	if r.shut != nil {
		return control.Plan{}, ErrStopped
	}
	p, n := r.plan(&l, dryRun || asked) // the order is for a caller
	if !dryRun {
		r.apply(ctx, p, l, n) // the pass that follows every request starts what it wants
		r.publishReload(p, began, nil)
	}
	return p, nil
}
