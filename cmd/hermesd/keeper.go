package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
)

// keeper keeps process groups for control owners (control.Keeper): any
// local process of hermesd's user hands it groups (own), or spawns a child
// gated until it is kept (clients/python, clients/node). hermesd's
// supervisor owns the owned ones, so that they die with hermesd (its
// death supervisor ends them as it ends units), and the keeper watches each
// owner through its exit file (supervisor.WatchExit: a pidfd, a kqueue),
// stopping its owned groups at its death: TERM, the grace, KILL. A
// persist_on_release group is recorded with its reason and never stopped:
// it outlives its owner and hermesd.
type keeper struct {
	ctx   context.Context // hermesd's helpers' life: the owners' watches end with it
	owner *supervisor.Owner
	log   *slog.Logger
	grace time.Duration
	sup   func() int // the death supervisor's pid (0: none)

	mu      sync.Mutex
	groups  map[int]*kept              // by pgid
	watched map[proc.Identity]struct{} // owners whose exit is watched
}

// kept is one group the keeper holds.
type kept struct {
	g     supervisor.Group
	owner proc.Identity
	info  control.OwnedGroup
}

func newKeeper(ctx context.Context, owner *supervisor.Owner, log *slog.Logger, sup func() int) *keeper {
	return &keeper{ctx: ctx, owner: owner, log: log, grace: supervisor.DefaultGrace, sup: sup,
		groups: map[int]*kept{}, watched: map[proc.Identity]struct{}{}}
}

func refusedf(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), control.ErrRefused)
}

// Own keeps req's groups for its owner, all or none. An owner already dead
// is refused, and the groups handed over for it (once they pass the
// checks) are stopped at once: nobody would be there to end them.
func (k *keeper) Own(ctx context.Context, req control.OwnRequest) (control.OwnedGroups, error) {
	if len(req.PGIDs) == 0 {
		return control.OwnedGroups{}, fmt.Errorf("%w: own: name at least one process group", control.ErrBadRequest)
	}
	switch req.Ownership {
	case "":
		req.Ownership = units.Owned
	case units.Owned:
	case units.PersistOnRelease:
		if strings.TrimSpace(req.Reason) == "" {
			return control.OwnedGroups{}, fmt.Errorf("%w: own: a persist_on_release group needs a written reason: why it must outlive its owner", control.ErrBadRequest)
		}
	default:
		return control.OwnedGroups{}, fmt.Errorf("%w: own: ownership %q: give %q or %q", control.ErrBadRequest, req.Ownership, units.Owned, units.PersistOnRelease)
	}
	ownerPID := req.Owner
	if ownerPID == 0 {
		ownerPID = req.CallerPID
	}
	owner, ownerErr := k.vetOwner(ownerPID)
	if ownerErr != nil && !errors.Is(ownerErr, proc.ErrGone) {
		return control.OwnedGroups{}, ownerErr
	}
	groups, err := k.vetGroups(req)
	if err != nil {
		return control.OwnedGroups{}, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, g := range groups {
		if kg := k.groups[g.PGID]; kg != nil && kg.g.Leader == g.Leader {
			return control.OwnedGroups{}, refusedf("group %d is kept already, for pid %d", g.PGID, kg.owner.PID)
		}
	}
	if ownerErr != nil {
		k.stopDead(ctx, groups, ownerPID)
		return control.OwnedGroups{}, ownerErr
	}
	if req.Ownership == units.Owned {
		if err := k.owner.Own(ctx, groups...); err != nil {
			if errors.Is(err, supervisor.ErrUnsafe) || errors.Is(err, proc.ErrGone) {
				return control.OwnedGroups{}, refusedf("own: %v", err)
			}
			return control.OwnedGroups{}, fmt.Errorf("own: %w", err)
		}
	}
	var res control.OwnedGroups
	now := time.Now()
	for _, g := range groups {
		kg := &kept{g: g, owner: owner, info: control.OwnedGroup{
			Name: g.Unit, PGID: g.PGID, PID: g.Leader.PID, Command: command(g.Leader.PID), Owner: owner.PID,
			Ownership: req.Ownership, Reason: req.Reason, Since: now, State: control.OwnedKept}}
		k.groups[g.PGID] = kg
		res.Groups = append(res.Groups, kg.info)
		k.log.Info("group kept for a control owner", "name", g.Unit, "pgid", g.PGID, "owner", owner.PID, "ownership", req.Ownership)
	}
	k.watchLocked(owner)
	return res, nil
}

// stopDead stops groups handed over for the dead owner pid: owned by
// hermesd's supervisor for the stop, so that its escapees go too.
func (k *keeper) stopDead(ctx context.Context, groups []supervisor.Group, pid int) {
	if err := k.owner.Own(ctx, groups...); err != nil {
		k.log.Warn("groups of a dead control owner not owned for their stop", "owner", pid, "err", err)
		return
	}
	for _, g := range groups {
		k.log.Info("stopping a group handed over for a dead owner", "pgid", g.PGID, "owner", pid)
		go k.stop(g)
	}
}

// stop stops g: TERM, the grace, KILL.
func (k *keeper) stop(g supervisor.Group) {
	if err := k.owner.Stop(context.WithoutCancel(k.ctx), g, syscall.SIGTERM, k.grace); err != nil && !errors.Is(err, supervisor.ErrClosed) {
		k.log.Warn("kept group's stop", "pgid", g.PGID, "err", err)
	}
}

// vetOwner checks the owner: a live process of hermesd's user, not init.
// An owner that has exited is an error wrapping proc.ErrGone.
func (k *keeper) vetOwner(pid int) (proc.Identity, error) {
	if pid <= 1 {
		return proc.Identity{}, refusedf("owner pid %d: the owner must be a live process of yours, other than init", pid)
	}
	if uid, err := proc.UID(pid); err == nil && uid != os.Geteuid() {
		return proc.Identity{}, refusedf("owner pid %d belongs to uid %d; hermesd runs as uid %d and keeps groups for that user's processes only", pid, uid, os.Geteuid())
	}
	id, err := proc.Read(pid)
	if err != nil || !id.Alive() {
		return proc.Identity{}, fmt.Errorf("owner pid %d has already exited: %w; its groups are not left running (%w)", pid, proc.ErrGone, control.ErrRefused)
	}
	return id, nil
}

// vetGroups resolves and checks req's groups: each has live members, all
// of hermesd's user; none is pgid ≤ 1, hermesd's, its supervisor's, nor
// holds the caller, an ancestor of the caller, or of hermesd.
func (k *keeper) vetGroups(req control.OwnRequest) ([]supervisor.Group, error) {
	forbidden := map[int]string{os.Getpid(): "hermesd's own group", syscall.Getpgrp(): "hermesd's own group"}
	if s := k.sup(); s > 0 {
		forbidden[s] = "hermesd's death supervisor"
	}
	for _, a := range append(lineage(req.CallerPID, "the caller"), lineage(os.Getpid(), "hermesd")...) {
		if _, ok := forbidden[a.pgid]; !ok { // the nearest says why
			forbidden[a.pgid] = a.what
		}
	}
	var out []supervisor.Group
	for _, pgid := range req.PGIDs {
		if pgid <= 1 {
			return nil, refusedf("pgid %d: a group id must be greater than 1", pgid)
		}
		if what, ok := forbidden[pgid]; ok {
			return nil, refusedf("group %d holds %s: it is never kept for an owner", pgid, what)
		}
		members, err := proc.GroupMembers(pgid)
		if err != nil || len(members) == 0 {
			return nil, refusedf("group %d has no live process", pgid)
		}
		for _, m := range members {
			if u, err := proc.UID(m); err == nil && u != os.Geteuid() {
				return nil, refusedf("process %d of group %d belongs to uid %d; hermesd keeps groups of uid %d only", m, pgid, u, os.Geteuid())
			}
		}
		lead := members[0]
		if slices.Contains(members, pgid) {
			lead = pgid
		}
		id, err := proc.Read(lead)
		if err != nil {
			return nil, refusedf("group %d: its process %d has just exited", pgid, lead)
		}
		name := req.Name
		if name == "" || len(req.PGIDs) > 1 {
			name = fmt.Sprintf("%s-%d", comm(lead), pgid)
		}
		out = append(out, supervisor.Group{Unit: name, PGID: pgid, Leader: id})
	}
	return out, nil
}

// kin is a process above the caller or hermesd (or the caller itself).
type kin struct {
	pgid int
	what string
}

// lineage is pid and the processes above it up to init, with their groups.
func lineage(pid int, of string) []kin {
	var out []kin
	for i := 0; pid > 1 && i < 1024; i++ {
		st, err := proc.ReadStat(pid)
		if err != nil {
			break
		}
		what := fmt.Sprintf("pid %d (%s), an ancestor of %s", pid, st.Comm, of)
		if i == 0 {
			what = fmt.Sprintf("pid %d (%s), %s", pid, st.Comm, of)
		}
		out = append(out, kin{pgid: st.PGID, what: what})
		pid = st.PPID
	}
	return out
}

func comm(pid int) string {
	if st, err := proc.ReadStat(pid); err == nil && st.Comm != "" {
		return strings.ReplaceAll(st.Comm, " ", "_")
	}
	return "group"
}

func command(pid int) string {
	argv, err := proc.Cmdline(pid)
	if err != nil {
		return ""
	}
	return strings.Join(ledger.Redact(argv), " ")
}

// watchLocked watches owner's exit once; at its exit its owned groups
// are stopped and its persistent ones marked persisting.
func (k *keeper) watchLocked(owner proc.Identity) {
	if _, ok := k.watched[owner]; ok {
		return
	}
	gone, err := supervisor.WatchExit(k.ctx, owner)
	if err != nil {
		k.log.Warn("control owner not watched; its groups are ended now", "owner", owner.PID, "err", err)
		k.ownerGoneLocked(owner)
		return
	}
	k.watched[owner] = struct{}{}
	go func() {
		select {
		case <-gone:
		case <-k.ctx.Done():
			return
		}
		k.mu.Lock()
		defer k.mu.Unlock()
		delete(k.watched, owner)
		k.ownerGoneLocked(owner)
	}()
}

// ownerGoneLocked ends what owner kept: its owned groups are stopped and
// forgotten, its persistent ones live on.
func (k *keeper) ownerGoneLocked(owner proc.Identity) {
	for pgid, kg := range k.groups {
		if kg.owner != owner {
			continue
		}
		if kg.info.Ownership == units.PersistOnRelease {
			kg.info.State = control.OwnedPersisting
			continue
		}
		k.log.Info("control owner exited; stopping its group", "owner", owner.PID, "pgid", pgid, "name", kg.g.Unit)
		delete(k.groups, pgid)
		go k.stop(kg.g)
	}
}

// ReleaseGroups gives groups up (see control.Keeper). A group not kept is
// an error naming it; the others are released all the same.
func (k *keeper) ReleaseGroups(ctx context.Context, req control.ReleaseRequest) (control.OwnedGroups, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var res control.OwnedGroups
	var errs []error
	for _, pgid := range req.PGIDs {
		kg := k.groups[pgid]
		if kg == nil {
			errs = append(errs, refusedf("group %d is not kept for anyone", pgid))
			continue
		}
		if kg.info.Ownership == units.Owned {
			var err error
			if req.OnceEmpty {
				err = k.owner.ReleaseOnceEmpty(ctx, kg.g)
			} else {
				err = k.owner.Release(ctx, kg.g)
			}
			if err != nil && !errors.Is(err, supervisor.ErrUnknown) {
				errs = append(errs, fmt.Errorf("release group %d: %w", pgid, err))
				continue
			}
		}
		if req.OnceEmpty && !groupGone(pgid) {
			kg.info.State = control.OwnedReleasing
		} else {
			delete(k.groups, pgid)
		}
		res.Groups = append(res.Groups, kg.info)
		k.log.Info("kept group released", "pgid", pgid, "once_empty", req.OnceEmpty)
	}
	return res, errors.Join(errs...)
}

func groupGone(pgid int) bool {
	m, err := proc.GroupMembers(pgid)
	return err == nil && len(m) == 0
}

// list is the kept groups for status, by pgid; those whose processes are
// all gone are forgotten.
func (k *keeper) list() []control.OwnedGroup {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []control.OwnedGroup
	for pgid, kg := range k.groups {
		if groupGone(pgid) {
			delete(k.groups, pgid)
			continue
		}
		// A spawned child's gate has exec'd its program by now: its
		// command line is the one to show.
		if c := command(kg.g.Leader.PID); c != "" && kg.g.Leader.Alive() {
			kg.info.Command = c
		}
		out = append(out, kg.info)
	}
	slices.SortFunc(out, func(a, b control.OwnedGroup) int { return a.PGID - b.PGID })
	return out
}

// keptBackend is hermesd's control backend with the keeper's routes, and
// its groups in status.
type keptBackend struct {
	backend
	k *keeper
}

var _ control.Keeper = keptBackend{}

func (b keptBackend) Own(ctx context.Context, req control.OwnRequest) (control.OwnedGroups, error) {
	return b.k.Own(ctx, req)
}

func (b keptBackend) ReleaseGroups(ctx context.Context, req control.ReleaseRequest) (control.OwnedGroups, error) {
	return b.k.ReleaseGroups(ctx, req)
}

// Status is the reconciler's, with the kept groups when no unit is named.
func (b keptBackend) Status(ctx context.Context, names ...string) (control.Status, error) {
	st, err := b.backend.Status(ctx, names...)
	if err == nil && len(names) == 0 {
		st.Owned = b.k.list()
	}
	return st, err
}
