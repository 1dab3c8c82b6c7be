package reconciler

import (
	"context"
	"time"

	"github.com/hermes-units/hermes/units"
)

// readopt runs once at Run start, before the first reconcile, in a gateway:
// each adoptable or persist_on_release group of a dead owner whose leader
// identity still matches (never a recycled pid) is taken over without a new
// spawn. A declared unit gets its group back as adopted; a persist group no
// longer declared is listed as released; an adoptable group no longer
// declared is stopped, as a removed unit would be. Groups whose owner is
// alive belong to it and are left alone.
func (r *Reconciler) readopt(ctx context.Context, l Loaded) {
	if r.opt.Role != Gateway || r.opt.Checkpoint == nil {
		return
	}
	svs, err := r.opt.Checkpoint.Survivors(ctx)
	if err != nil {
		r.log.Error("ledger not read; nothing re-adopted", "err", err)
		return
	}
	declared := map[string]units.Spec{}
	for _, s := range l.Specs {
		declared[s.Name] = s
	}
	for _, s := range svs {
		if s.OwnerAlive || !s.Group.Leader.Alive() {
			continue
		}
		if r.units[s.Unit] != nil {
			r.log.Warn("a second survivor of the same unit left alone", "unit", s.Unit, "pid", s.Group.Leader.PID)
			continue
		}
		spec, ok := declared[s.Unit]
		if !ok && units.Ownership(s.Ownership) == units.PersistOnRelease {
			if err := r.opt.Checkpoint.Released(ctx, s); err != nil {
				r.log.Warn("ledger: release not recorded", "unit", s.Unit, "err", err)
			}
			r.released = append(r.released, s)
			r.log.Info("survivor no longer declared; released", "unit", s.Unit, "pid", s.Group.Leader.PID)
			continue
		}
		if !ok {
			spec = units.Spec{Name: s.Unit, Ownership: units.Ownership(s.Ownership)}
		}
		exited, err := r.opt.Spawner.WatchExit(r.base, s.Group)
		if err != nil {
			r.log.Warn("survivor not re-adopted: cannot watch its exit", "unit", s.Unit, "pid", s.Group.Leader.PID, "err", err)
			continue
		}
		u := &unit{spec: spec, hash: hash(spec), enabled: ok, group: s.Group,
			state: Running, ready: true, adopted: true, started: time.Now(), logPath: s.Log}
		if u.logPath == "" {
			u.logPath = r.logPath(spec)
		}
		u.gen = r.nextGen()
		runCtx, cancel := context.WithCancel(r.base)
		u.cancel = cancel
		name, gen := u.spec.Name, u.gen
		r.wg.Go(func() {
			select {
			case <-exited:
				r.post(exitEvent{name, gen, nil})
			case <-runCtx.Done():
			}
		})
		r.units[s.Unit] = u
		if err := r.opt.Checkpoint.Adopted(ctx, s); err != nil {
			r.log.Warn("ledger: adoption not recorded", "unit", s.Unit, "err", err)
		}
		r.log.Info("survivor re-adopted", "unit", s.Unit, "pid", s.Group.Leader.PID, "pgid", s.Group.PGID)
	}
}
