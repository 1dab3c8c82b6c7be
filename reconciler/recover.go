package reconciler

import (
	"context"
	"errors"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
)

// recover runs at a gateway's start (readopt), before the first reconcile,
// on Run's goroutine: it looks at the owned groups that dead owners of the
// state directory left alive. They die with their owner's supervisor; when
// hermesd and its supervisor were killed together, nothing killed them.
// Each entry is first held against the kernel (trust): one it contradicts
// is never signalled. Then:
//   - a group a dead hermesd (gateway or worker) spawned for a unit this
//     gateway is about to start would be a duplicate: it is ended
//     (the unit's stop signal, its stop timeout, KILL; the group must be
//     empty) before the unit starts, logged and listed in status;
//   - a group given up on purpose (released) is listed as released, and
//     its declared unit is not started beside it (held, as after
//     `hermesctl release`: Start refuses while the group runs);
//   - a survivor whose leader is gone while processes of its spawn (found
//     by its tags) live on cannot be re-adopted (no main process), and
//     beside a new copy of its unit it would be a duplicate: what is left
//     of it is ended as above, the unit's stop signal, timeout and KILL;
//     so is what is left of an owned group whose leader exited as its
//     owner and its supervisor were killed (a stop under way);
//   - any other (a dead `hermesctl run`'s, a unit no longer declared) is
//     left for `hermesctl adopt --orphans`, and counted in status.
//
// The stops run concurrently; recover returns once all are done, so the
// units start after them.
func (r *Reconciler) recover(ctx context.Context, declared map[string]units.Spec) {
	recs, ok := r.deadRecords(ctx)
	if !ok {
		return
	}
	var ends []ending
	for _, rec := range recs {
		if e, ok := r.sortDead(rec, declared); ok {
			ends = append(ends, e)
		}
	}
	if len(ends) > 0 {
		r.log.Warn("owned groups left by a dead hermesd (killed with its supervisor); ending them before starting the units again", "groups", len(ends))
	}
	res := r.endAll(ctx, ends)
	for _, e := range res {
		g := e.group
		if e.err != nil {
			r.log.Error("group left by a dead hermesd not ended", "unit", g.Unit, "pid", g.Leader.PID, "pgid", g.PGID, "owner", e.owner.PID, "err", e.err)
		} else {
			r.log.Warn("ended a group left by a dead hermesd: the unit starts anew", "unit", g.Unit, "pid", g.Leader.PID, "pgid", g.PGID, "owner", e.owner.PID)
		}
	}
	r.found.ended = append(r.found.ended, res...)
}

// ending is a group of a dead owner that recover ends, with the spec its
// stop follows.
type ending struct {
	rec  Record
	spec units.Spec
	gs   []supervisor.Group // what to stop; nil: the group and its strays
}

// deadRecords reads the ledger entries of other owners whose group is
// alive, and the spawns of dead owners the ledger never recorded; ok is
// false when there is nothing to look at (no recorder, or the ledger not
// read).
func (r *Reconciler) deadRecords(ctx context.Context) (recs []Record, ok bool) {
	rc, ok := r.opt.Checkpoint.(recorder)
	if !ok {
		return nil, false
	}
	recs, err := rc.Records(ctx)
	if err != nil {
		r.log.Error("ledger not read; the groups of dead owners are not looked at", "err", err)
		return nil, false
	}
	if u, ok := r.opt.Checkpoint.(unrecorder); ok {
		more, err := u.Unrecorded(ctx)
		if err != nil {
			r.log.Warn("the spawns of dead owners missing from the ledger are not looked for", "err", err)
		}
		recs = append(recs, more...)
	}
	return recs, true
}

// sortDead decides what becomes of rec (see recover): ended (returned, ok),
// listed as released, counted as a leftover, or left alone (its owner
// alive, held already, a survivor readopt takes, or an entry the kernel
// contradicts).
func (r *Reconciler) sortDead(rec Record, declared map[string]units.Spec) (ending, bool) {
	if rec.OwnerAlive || r.holds(rec.Group.PGID) {
		return ending{}, false
	}
	if rec.Ownership.Survivor() {
		if spec, gs := r.remainsOf(rec, declared); len(gs) > 0 {
			return ending{rec, spec, gs}, true
		}
		return ending{}, false // re-adopted or listed by readopt
	}
	if err := r.trust(rec.Survivor); err != nil {
		if !errors.Is(err, proc.ErrGone) {
			r.log.Warn("group of a dead owner neither ended nor adopted: the kernel contradicts its ledger entry", "unit", rec.Unit, "pid", rec.Group.Leader.PID, "err", err)
			return ending{}, false
		}
		// Its leader exited while the owner and its supervisor were
		// being killed (a stop under way): what is left of the spawn
		// would run beside the unit's new copy.
		if rec.Role == units.RoleGateway || rec.Role == units.RoleWorker {
			if spec, gs := r.remainsOf(rec, declared); len(gs) > 0 {
				return ending{rec, spec, gs}, true
			}
		}
		return ending{}, false
	}
	spec, isDeclared := declared[rec.Unit]
	switch free := isDeclared && r.units[rec.Unit] == nil; {
	case rec.State == ledger.Released:
		// Given up on purpose (`hermesctl release`): listed, and its
		// unit is not started beside it (as Start refuses it); it is
		// adopted back only if its file is removed and declared
		// again (reclaim).
		r.addReleased(rec.Survivor)
		if free {
			r.found.held[rec.Unit] = true
		}
	case free && (rec.Role == units.RoleGateway || rec.Role == units.RoleWorker):
		return ending{rec: rec, spec: spec}, true
	default:
		r.found.leftovers = append(r.found.leftovers, rec.Group)
	}
	return ending{}, false
}

// endedGroup is a group of a dead owner that recover ended (err nil), or
// could not end, and when.
type endedGroup struct {
	group supervisor.Group
	owner proc.Identity
	at    time.Time
	err   error
}

// endAll stops every group of ends concurrently (the unit's stop signal,
// its stop timeout, KILL) and returns, once all are done, what became of
// each.
func (r *Reconciler) endAll(ctx context.Context, ends []ending) []endedGroup {
	res := make([]endedGroup, len(ends))
	sf, _ := r.opt.Checkpoint.(strayFinder)
	var wg sync.WaitGroup
	for i, e := range ends {
		g := e.rec.Group
		sig, grace := stopSignal(e.spec), stopGrace(e.spec)
		res[i] = endedGroup{group: g, owner: e.rec.Owner}
		gs := e.gs
		if gs == nil {
			gs = []supervisor.Group{g}
			if sf != nil && g.Cgroup == "" { // a cgroup holds its escapees already
				gs = append(gs, sf.Strays(e.rec.Survivor)...)
			}
		}
		errs := make([]error, len(gs))
		var one sync.WaitGroup
		for j, g := range gs {
			one.Go(func() { errs[j] = r.opt.Spawner.Stop(ctx, g, sig, grace) })
		}
		wg.Go(func() {
			one.Wait()
			res[i].err, res[i].at = errors.Join(errs...), time.Now()
		})
	}
	wg.Wait()
	return res
}

// unrecorder is the part of the ledger Checkpoint that finds the spawns of
// dead owners of the state directory that the ledger never recorded (by
// their tags): an owned spawn's record may trail its start, and its owner
// may die first.
type unrecorder interface {
	Unrecorded(ctx context.Context) ([]Record, error)
}

// remainsOf returns what is left of a group rec (a survivor's, or an
// owned one of a dead gateway or worker) whose leader is gone
// (found by its spawn's tags), with its declared unit's spec, to be ended
// before the unit starts; none when the leader lives (readopt adopts it),
// when the kernel contradicts the entry otherwise, when the group was
// released, or when its unit is not declared (left for adopt --orphans).
func (r *Reconciler) remainsOf(rec Record, declared map[string]units.Spec) (units.Spec, []supervisor.Group) {
	spec, ok := declared[rec.Unit]
	sf, found := r.opt.Checkpoint.(strayFinder)
	if !ok || !found || rec.State == ledger.Released || !errors.Is(r.trust(rec.Survivor), proc.ErrGone) {
		return units.Spec{}, nil
	}
	gs := sf.Remains(rec.Survivor)
	switch {
	case len(gs) == 0:
	case rec.Ownership.Survivor():
		r.log.Warn("survivor's leader is gone but processes of its spawn live on: ended, not re-adopted, so that its unit does not run twice", "unit", rec.Unit, "pid", rec.Group.Leader.PID, "pgid", rec.Group.PGID, "left", len(gs))
	default:
		r.log.Warn("owned group's leader is gone but processes of its spawn live on, their owner and its supervisor dead: ended, so that its unit does not run twice", "unit", rec.Unit, "pid", rec.Group.Leader.PID, "pgid", rec.Group.PGID, "left", len(gs))
	}
	return spec, gs
}

// strayFinder is the part of the ledger Checkpoint that finds the escapee
// groups of a spawn by its tags (ledger.Strays): a group of a dead owner is
// ended with them where no cgroup holds them.
type strayFinder interface {
	Strays(s Survivor) []supervisor.Group
	Remains(s Survivor) []supervisor.Group
}

// adoptBack makes rec's released group the running run of its declared
// unit spec again: registered with the death supervisor unless the unit
// survives its owner (keeps), its exit watched. At most one copy of a
// unit runs: the group given up is taken back instead of a new spawn.
func (r *Reconciler) adoptBack(ctx context.Context, spec units.Spec, s Survivor) error {
	if !keeps(r.opt.Role, spec.Ownership) {
		ad, ok := r.opt.Spawner.(Adopter)
		if !ok {
			return errors.New("this hermesd has no supervisor that can adopt groups")
		}
		if err := ad.Own(ctx, s.Group); err != nil {
			return err
		}
	}
	u := r.units[spec.Name]
	if u == nil {
		u = &unit{spec: &spec, hash: hash(spec), enabled: true}
	}
	if err := r.adoptRun(ctx, u, s); err != nil {
		return err
	}
	r.log.Info("released group declared again; adopted back", "unit", s.Unit, "pid", s.Group.Leader.PID, "pgid", s.Group.PGID)
	return nil
}

// reclaim runs before a spawn of u (Run's goroutine): a released group of
// u's name that still runs, and whose entry the kernel confirms, is
// adopted back instead (it was given up, and its unit is declared again:
// a spawn would run a second copy beside it). It reports whether u now
// runs that group.
func (r *Reconciler) reclaim(ctx context.Context, u *unit) bool {
	i := slices.IndexFunc(r.released, func(s Survivor) bool { return s.Unit == u.spec.Name })
	if i < 0 {
		return false
	}
	s := r.released[i]
	if err := r.trust(s); err != nil {
		if !errors.Is(err, proc.ErrGone) {
			r.log.Warn("released group not adopted back: the kernel contradicts its ledger entry", "unit", s.Unit, "pid", s.Group.Leader.PID, "err", err)
		}
		return false
	}
	if err := r.adoptBack(ctx, *u.spec, s); err != nil {
		r.log.Warn("released group declared again, not adopted back", "unit", s.Unit, "pid", s.Group.Leader.PID, "err", err)
		return false
	}
	r.released = slices.Delete(r.released, i, i+1)
	return true
}

// recovery is the Recovery part of status: the groups ended at the start,
// and the leftovers of dead owners still alive. It reads /proc: call it
// off Run's goroutine.
func recovery(ended []endedGroup, leftovers []supervisor.Group) *control.Recovery {
	n := 0
	for _, g := range leftovers {
		if groupAlive(g) {
			n++
		}
	}
	if len(ended) == 0 && n == 0 {
		return nil
	}
	rec := &control.Recovery{Ended: make([]control.EndedGroup, 0, len(ended)), Leftovers: n}
	for _, e := range ended {
		w := control.EndedGroup{Unit: e.group.Unit, PID: e.group.Leader.PID, PGID: e.group.PGID, Owner: e.owner.PID, At: e.at}
		if e.err != nil {
			w.Error = e.err.Error()
		}
		rec.Ended = append(rec.Ended, w)
	}
	return rec
}

func stopSignal(s units.Spec) syscall.Signal {
	if sig := syscall.Signal(s.StopSignal); sig != 0 {
		return sig
	}
	return syscall.SIGTERM
}

func stopGrace(s units.Spec) time.Duration {
	if g := s.Timeouts.Stop; g > 0 {
		return g
	}
	return DefaultStopGrace
}
