package reconciler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
)

// Supervised is the Spawner of a real owner: SpawnOwned, Stop and pidfd
// WatchExit of package supervisor.
func Supervised(o *supervisor.Owner) Spawner { return ownerSpawner{o} }

type ownerSpawner struct{ o *supervisor.Owner }

type child struct{ c *supervisor.Child }

func (c child) Group() supervisor.Group { return c.c.Group }
func (c child) Done() <-chan struct{}   { return c.c.Done() }
func (c child) Err() error              { return c.c.Err() }

func (c child) AfterExit(f func()) func() bool { return c.c.AfterExit(f) }

func (s ownerSpawner) Spawn(ctx context.Context, sp supervisor.Spec) (Process, error) {
	c, err := s.o.SpawnOwned(ctx, sp)
	if err != nil {
		return nil, err
	}
	return child{c}, nil
}

func (s ownerSpawner) Stop(ctx context.Context, g supervisor.Group, sig syscall.Signal, grace time.Duration) error {
	return s.o.Stop(ctx, g, sig, grace)
}

func (s ownerSpawner) StopAll(ctx context.Context, orders []supervisor.StopOrder, signalled func(), done func(i int, err error)) error {
	return s.o.StopAll(ctx, orders, signalled, done)
}

func (s ownerSpawner) Members(g supervisor.Group) []proc.Identity {
	return s.o.Members(g)
}

func (s ownerSpawner) Empty(g supervisor.Group) bool { return s.o.Empty(g) }

// Claim gives g a process the owner holds as an orphan once evidence
// names g's unit (see claimer).
func (s ownerSpawner) Claim(g supervisor.Group, pid int, why string) bool {
	return s.o.Claim(g, pid, why)
}

// Unclaimed: see claimer.
func (s ownerSpawner) Unclaimed(g supervisor.Group) bool { return s.o.Unclaimed(g) }

func (s ownerSpawner) StopMain(ctx context.Context, g supervisor.Group, main proc.Identity, sig syscall.Signal, grace time.Duration) error {
	return s.o.StopMain(ctx, g, main, sig, grace)
}

func (s ownerSpawner) WatchExit(ctx context.Context, g supervisor.Group) (<-chan struct{}, error) {
	return supervisor.WatchExit(ctx, g.Leader)
}

// KeepsDaemons: only a cgroup holds a daemon that left its process group
// (see daemonKeeper).
func (s ownerSpawner) KeepsDaemons() bool { return s.o.Mode() == supervisor.ModeCgroup }

// Ledger is the Checkpoint of a state directory's ledger, for the owner
// self in role.
func Ledger(l *ledger.Ledger, self proc.Identity, role units.Role) Checkpoint {
	return ledgerCheckpoint{l, self, role}
}

type ledgerCheckpoint struct {
	l    *ledger.Ledger
	self proc.Identity
	role units.Role
}

func survivorOf(e ledger.Entry) Survivor {
	return Survivor{
		Unit: e.Unit, Group: supervisor.Group{Unit: e.Unit, PGID: e.PGID, Leader: e.Leader, Cgroup: e.Cgroup},
		Ownership: e.Ownership, Log: e.Log, Owner: e.Owner, OwnerAlive: e.Owner.Alive(), State: e.State,
		Spawn: e.Spawn,
	}
}

func (c ledgerCheckpoint) Survivors(ctx context.Context) ([]Survivor, error) {
	return others(ctx, c, func(e ledger.Entry) bool { return e.Ownership.Survivor() }, survivorOf)
}

// others lists, made by f, the ledger entries of other owners that keep
// accepts.
func others[T any](ctx context.Context, c ledgerCheckpoint, keep func(ledger.Entry) bool, f func(ledger.Entry) T) ([]T, error) {
	es, err := c.l.Entries(ctx)
	if err != nil {
		return nil, err
	}
	var out []T
	for _, e := range es {
		if e.Owner != c.self && keep(e) {
			out = append(out, f(e))
		}
	}
	return out, nil
}

func (c ledgerCheckpoint) mark(ctx context.Context, s Survivor, state ledger.State) error {
	return c.l.Update(ctx, func(es []ledger.Entry) ([]ledger.Entry, error) {
		for i := range es {
			if es[i].Leader == s.Group.Leader && es[i].PGID == s.Group.PGID {
				es[i].State = state
				if state == ledger.Adopted {
					es[i].Owner, es[i].Role = c.self, c.role
				}
			}
		}
		return es, nil
	})
}

// Rebased moves the entry of the group old to the group now (a forking
// survivor's main process, see rebaser); an entry not found is an error.
func (c ledgerCheckpoint) Rebased(ctx context.Context, old, now supervisor.Group) error {
	return c.l.Update(ctx, func(es []ledger.Entry) ([]ledger.Entry, error) {
		for i := range es {
			if es[i].Leader == old.Leader && es[i].PGID == old.PGID {
				es[i].Leader, es[i].PGID = now.Leader, now.PGID
				return es, nil
			}
		}
		return nil, fmt.Errorf("no ledger entry of %s led by %s", old.Unit, old.Leader)
	})
}

// Verify holds s's entry against the kernel (ledger.Check).
func (c ledgerCheckpoint) Verify(s Survivor) error {
	return c.l.Check(ledger.Entry{Unit: s.Unit, Leader: s.Group.Leader, PGID: s.Group.PGID, Cgroup: s.Group.Cgroup, Spawn: s.Spawn, Log: s.Log})
}

// Unrecorded lists the live leaders of spawns of this state directory
// that another owner, now dead, started but whose entries the ledger does
// not hold (an owned spawn's record may trail its start: its owner died
// first), found by their tags (ledger.Rebuild).
func (c ledgerCheckpoint) Unrecorded(ctx context.Context) ([]Record, error) {
	es, err := c.l.Entries(ctx)
	if err != nil {
		return nil, err
	}
	found, err := ledger.Rebuild(c.l.Dir())
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, e := range found {
		if e.Owner == c.self || e.Owner.Alive() || slices.ContainsFunc(es, func(x ledger.Entry) bool { return x.Leader == e.Leader }) {
			continue
		}
		out = append(out, Record{Survivor: survivorOf(e), Argv: e.Argv, Role: e.Role})
	}
	return out, nil
}

// Strays lists the escapee groups of s's spawn (ledger.Strays): one
// Group per process group, led by the process found in it.
func (c ledgerCheckpoint) Strays(s Survivor) []supervisor.Group {
	return groupsOf(s.Unit, c.l.Strays(ledger.Entry{Unit: s.Unit, PGID: s.Group.PGID, Spawn: s.Spawn}))
}

// Remains lists the groups of what is left of s's spawn, its own group
// included, by its tags (ledger.Remains).
func (c ledgerCheckpoint) Remains(s Survivor) []supervisor.Group {
	return groupsOf(s.Unit, c.l.Remains(ledger.Entry{Unit: s.Unit, PGID: s.Group.PGID, Spawn: s.Spawn}))
}

// groupsOf makes one Group of unit per process found, its leader set only
// when the process leads its group (checked before each signal).
func groupsOf(unit string, ids []proc.Identity) []supervisor.Group {
	var out []supervisor.Group
	for _, id := range ids {
		pgid := id.PID
		if st, err := proc.ReadStat(id.PID); err == nil {
			pgid = st.PGID
		}
		g := supervisor.Group{Unit: unit, PGID: pgid}
		if pgid == id.PID {
			g.Leader = id
		}
		out = append(out, g)
	}
	return out
}

func (c ledgerCheckpoint) Adopted(ctx context.Context, s Survivor) error {
	return c.mark(ctx, s, ledger.Adopted)
}

func (c ledgerCheckpoint) Released(ctx context.Context, s Survivor) error {
	return c.mark(ctx, s, ledger.Released)
}

func (c ledgerCheckpoint) Who(ctx context.Context, pid int) (Survivor, bool, error) {
	es, err := c.l.Entries(ctx)
	if err != nil {
		return Survivor{}, false, err
	}
	pgid := 0
	if st, err := proc.ReadStat(pid); err == nil {
		pgid = st.PGID
	}
	cg := cgroupOf(pid)
	for _, e := range es {
		if e.Leader.PID == pid || (pgid > 1 && e.PGID == pgid) || (cg != "" && e.Cgroup != "" && strings.HasSuffix(e.Cgroup, cg)) {
			return survivorOf(e), true, nil
		}
	}
	return Survivor{}, false, nil
}

// cgroupOf is pid's cgroup v2 path relative to the hierarchy's root, "" when
// none (or the root).
func cgroupOf(pid int) string {
	if cg := proc.Cgroup(pid); cg != "/" {
		return cg
	}
	return ""
}

func (s ownerSpawner) Signal(g supervisor.Group, sig syscall.Signal) error { return s.o.Signal(g, sig) }

func (s ownerSpawner) SignalProcess(id proc.Identity, sig syscall.Signal) error {
	return supervisor.SignalProcess(id, sig)
}
