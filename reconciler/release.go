package reconciler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
)

// Release gives a unit's group up (SPEC §8): it is unregistered from the
// death supervisor, so it outlives hermesd; its ledger entry is marked
// released; status lists it as released; the reconciler stops managing it:
// no restart, and a later Start of the unit is refused while the released
// group runs (see startRefused). Only an active unit can be released.
func (r *Reconciler) Release(ctx context.Context, name string) (control.Released, error) {
	ad, ok := r.opt.Spawner.(Adopter)
	if !ok {
		return control.Released{}, refused("this hermesd has no supervisor to release groups from")
	}
	return ask(ctx, r, func(ctx context.Context) (control.Released, error) {
		u, err := r.declared(name)
		if err != nil {
			return control.Released{}, err
		}
		if !u.state.active() || u.state == Stopping {
			return control.Released{}, refused("unit %s is %s: only a running group can be released", name, u.state)
		}
		g := u.run.group
		// The output first: from the release on, the group may outlive
		// hermesd, and must not write into its pipes then.
		if c := u.run.output; c != nil {
			if err := r.handOver(ctx, c); err != nil {
				return control.Released{}, fmt.Errorf("release %s: its output could not be handed over to a relay, so its group stays owned: %w", name, err)
			}
			u.run.output = nil
		}
		if err := ad.Release(ctx, g); err != nil {
			return control.Released{}, fmt.Errorf("release %s: %w", name, err)
		}
		s := Survivor{Unit: name, Group: g, Ownership: ownership(*u.spec), Log: u.logPath, State: ledger.Released}
		if r.opt.Checkpoint != nil {
			if cerr := r.opt.Checkpoint.Released(ctx, s); cerr != nil {
				r.log.Warn("ledger: release not recorded", "unit", name, "err", cerr)
			}
		}
		u.run.end()
		u.run = nil
		u.stopTimer(timerBackoff)
		u.gen = r.nextGen() // events of the released run are stale
		r.addReleased(s)
		if u.external {
			r.unwatchLog(u)
			delete(r.units, name)
			r.reorder()
			r.declare(u, g.PGID)
		} else {
			u.state, u.enabled, u.err = Inactive, false, nil
		}
		r.log.Info("group released: it outlives hermesd", "unit", name, "pgid", g.PGID)
		return control.Released{Unit: name, PGID: g.PGID, PID: g.Leader.PID}, nil
	})
}

// releasedGone reports that a released group is empty: its row goes.
type releasedGone struct{ g supervisor.Group }

// addReleased lists s as released (Run's goroutine) and watches its group,
// so that the row goes once the group has ended: no longer hermesd's, it
// has nothing more to show. The watch waits for the leader's exit (a
// pidfd), then checks that the group is empty; a group that outlives its
// leader is caught by Status, which checks released rows as it reads them.
// The watch ends with Run.
func (r *Reconciler) addReleased(s Survivor) {
	r.released = append(r.released, s)
	g, ctx := s.Group, r.base
	exited, err := r.opt.Spawner.WatchExit(ctx, g)
	r.wg.Go(func() {
		if err == nil { // else the leader is gone already
			select {
			case <-exited:
			case <-ctx.Done():
				return
			}
		}
		if !groupAlive(g) {
			r.post(releasedGone{g})
		}
	})
}

// groupAlive reports whether g has a live member (its leader, or another
// process of its group or cgroup). It reads /proc: call it off Run's
// goroutine.
func groupAlive(g supervisor.Group) bool {
	return ledger.Entry{Leader: g.Leader, PGID: g.PGID, Cgroup: g.Cgroup}.Alive()
}

// dropReleased forgets the released rows of g (Run's goroutine). The unit
// of a released row stays as it is: inactive, until started.
func (r *Reconciler) dropReleased(g supervisor.Group) {
	n := len(r.released)
	r.released = slices.DeleteFunc(r.released, func(s Survivor) bool {
		return s.Group.PGID == g.PGID && s.Group.Leader == g.Leader
	})
	if len(r.released) < n {
		r.log.Info("released group ended", "pgid", g.PGID, "pid", g.Leader.PID)
	}
}

// startRefused runs on Run's goroutine before a Start of name: a unit whose
// released group still runs is not started again beside it (two copies,
// a port clash); a released group that is gone is forgotten and the unit
// starts afresh. An adopted group's unit has nothing to start once gone.
func (r *Reconciler) startRefused(name string) error {
	kept := r.released[:0]
	var err error
	for _, s := range r.released {
		if s.Unit != name {
			kept = append(kept, s)
			continue
		}
		if groupAlive(s.Group) {
			kept = append(kept, s)
			err = fmt.Errorf("unit %s: its released group (pgid %d, pid %d) still runs; stop it yourself, or take it back with `hermesctl adopt --pgid %d --as %s-old`, then start again: %w",
				name, s.Group.PGID, s.Group.Leader.PID, s.Group.PGID, name, control.ErrConflict)
		}
	}
	r.released = kept
	if err != nil {
		return err
	}
	if u := r.units[name]; u != nil && u.external && !u.state.active() {
		return fmt.Errorf("unit %s is an adopted group, not a unit file: there is nothing to start: %w", name, control.ErrConflict)
	}
	return nil
}

// Orphans lists the leftovers of dead owners found in the ledger (SPEC §8),
// each with its evidence, and with adopt set adopts those whose leader
// identity still matches the ledger. Processes with no ledger entry are
// never listed; released groups are not leftovers (they were given up on
// purpose) and are skipped.
func (r *Reconciler) Orphans(ctx context.Context, req control.OrphansRequest) (control.OrphanReport, error) {
	adopt := req.Adopt
	ad, canAdopt := r.opt.Spawner.(Adopter)
	if adopt && !canAdopt {
		return control.OrphanReport{}, refused("this hermesd has no supervisor that can adopt groups")
	}
	rc, ok := r.opt.Checkpoint.(recorder)
	if !ok {
		return control.OrphanReport{Orphans: []control.Orphan{}, Adopted: []control.Adopted{}}, nil
	}
	gd := r.guards(control.AdoptRequest{CallerPID: req.CallerPID, CallerPGID: req.CallerPGID})
	return ask(ctx, r, func(ctx context.Context) (control.OrphanReport, error) {
		rep := control.OrphanReport{Orphans: []control.Orphan{}, Adopted: []control.Adopted{}}
		recs, err := rc.Records(ctx)
		if err != nil {
			return rep, fmt.Errorf("orphans: read the ledger: %w", err)
		}
		ports := listeningPorts()
		for _, rec := range recs {
			if rec.OwnerAlive || rec.State == ledger.Released || r.holds(rec.Group.PGID) {
				continue
			}
			o := r.evidence(rec, gd, ports)
			rep.Orphans = append(rep.Orphans, o)
		}
		if !adopt {
			return rep, nil
		}
		for i, o := range rep.Orphans {
			if !o.Adoptable {
				continue
			}
			rec := recs[indexOf(recs, o)]
			name := rec.Unit
			if r.units[name] != nil || !validName().MatchString(name) {
				name = ""
			}
			g := rec.Group
			g.Cgroup = "" // contained as a process group: the cgroup path came from the ledger
			res, aerr := r.take(ctx, ad, g, name, gd)
			if aerr != nil {
				rep.Orphans[i].Adoptable, rep.Orphans[i].Why = false, aerr.Error()
				continue
			}
			rep.Adopted = append(rep.Adopted, res)
		}
		return rep, nil
	})
}

func indexOf(recs []Record, o control.Orphan) int {
	for i, rec := range recs {
		if rec.Group.PGID == o.PGID && rec.Group.Leader.PID == o.PID && rec.Group.Leader.StartTime == o.StartTime {
			return i
		}
	}
	return -1
}

// holds reports whether an active unit of this hermesd runs group pgid.
func (r *Reconciler) holds(pgid int) bool {
	for _, u := range r.units {
		if u.state.active() && u.run.group.PGID == pgid {
			return true
		}
	}
	return false
}

// evidence says why rec is a leftover, and whether the sweep may adopt it:
// only when the leader recorded in the ledger is still that very process.
func (r *Reconciler) evidence(rec Record, gd guards, ports map[uint64]int) control.Orphan {
	g := rec.Group
	o := control.Orphan{
		Unit: rec.Unit, PID: g.Leader.PID, PGID: g.PGID, StartTime: g.Leader.StartTime,
		Ownership: rec.Ownership, Owner: rec.Owner.PID, OwnerRole: rec.Role, Command: strings.Join(rec.Argv, " "),
	}
	if argv, err := proc.Cmdline(g.Leader.PID); err == nil && g.Leader.Alive() {
		o.Command = strings.Join(ledger.Redact(argv), " ")
	}
	if g.Leader.Alive() {
		o.Evidence = append(o.Evidence, fmt.Sprintf("identity matches: pid %d still has start time %d, as recorded in the ledger", g.Leader.PID, g.Leader.StartTime))
		o.Adoptable = true
		if err := r.trust(rec.Survivor); err != nil && !errors.Is(err, proc.ErrGone) {
			// The ledger is evidence, not authority: a sweep never takes
			// a group the kernel does not confirm.
			o.Adoptable, o.Why = false, fmt.Sprintf("the kernel contradicts its ledger entry (%v); adopt it yourself with `hermesctl adopt --pgid %d` if you are sure", err, g.PGID)
		}
	} else {
		o.Why = fmt.Sprintf("its leader pid %d has exited (or the pid was recycled): the identity cannot be checked; adopt it yourself with `hermesctl adopt --pgid %d` if you are sure", g.Leader.PID, g.PGID)
	}
	if st, err := proc.ReadStat(g.Leader.PID); err == nil && o.Adoptable {
		o.PPID = st.PPID
		switch {
		case st.PPID == 1:
			o.Evidence = append(o.Evidence, "ppid 1: re-parented to init")
		case st.PPID != rec.Owner.PID:
			comm := "?"
			if ps, err := proc.ReadStat(st.PPID); err == nil {
				comm = ps.Comm
			}
			o.Evidence = append(o.Evidence, fmt.Sprintf("ppid %d (%s): re-parented to a subreaper, not its owner", st.PPID, comm))
		}
	}
	o.Evidence = append(o.Evidence, fmt.Sprintf("owner pid %d (%s) is gone", rec.Owner.PID, cmp.Or(string(rec.Role), "-")))
	members, _ := proc.GroupMembers(g.PGID)
	o.Ports = portsOf(members, ports)
	if len(o.Ports) > 0 {
		ps := make([]string, len(o.Ports))
		for i, p := range o.Ports {
			ps[i] = strconv.Itoa(p)
		}
		o.Evidence = append(o.Evidence, "holds port "+strings.Join(ps, ", "))
	}
	if o.Adoptable {
		if err := gd.check(g.PGID); err != nil {
			o.Adoptable, o.Why = false, err.Error()
		}
	}
	if o.Adoptable && gd.uid != 0 {
		for _, m := range members {
			if u, err := proc.UID(m); err == nil && u != gd.uid {
				o.Adoptable, o.Why = false, fmt.Sprintf("process %d belongs to uid %d; hermesd runs as uid %d", m, u, gd.uid)
				break
			}
		}
	}
	return o
}

// listeningPorts maps the inode of every listening TCP socket to its port
// (empty when the tables cannot be read).
func listeningPorts() map[uint64]int {
	out := map[uint64]int{}
	ls, _ := proc.Listeners()
	for _, l := range ls {
		out[l.Inode] = int(l.Addr.Port())
	}
	return out
}

// portsOf lists the ports whose listening sockets the pids hold open
// (/proc/PID/fd → socket:[inode]), sorted, without repeats.
func portsOf(pids []int, ports map[uint64]int) []int {
	seen := map[int]bool{}
	var out []int
	for _, pid := range pids {
		held, _ := proc.SocketInodes(pid)
		for _, n := range held {
			if p, ok := ports[n]; ok && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	sort.Ints(out)
	return out
}
