package supervisor

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/proc"
)

// Members lists the live processes of g, each with its identity, ordered
// by pid: the members of its cgroup, or of its process group and of the
// escapee groups found under it (pgroup mode: escapees are looked for
// first, so that a daemon that just left the group is counted, and
// registered, now). A group not registered here (a re-adopted survivor)
// is listed from its cgroup or its process group alone.
//
// This is how a unit whose launcher exited tells what it left: a forking
// daemon (its main pid must be one of these), or a simple unit that
// daemonized.
func (o *Owner) Members(g Group) []proc.Identity {
	o.mu.Lock()
	r := o.findLocked(g)
	if r == nil {
		r = &reg{g: o.foreignCgroupLocked(g)}
	}
	o.mu.Unlock()
	scan := o.mode == ModePGroup && r.key != ""
	// A process that calls setsid between the scan (it was still in the
	// group then, so no escapee) and the listing (it is not, now) would be
	// missed: an empty answer is checked by a second scan.
	for try := 0; ; try++ {
		if scan {
			o.scanOf(r)
			o.awaitEscapees(r)
		}
		if out := o.list(r); len(out) > 0 || !scan || try == 1 {
			return out
		}
	}
}

// escapeeAnswerWait bounds how long Members waits for the supervisor to
// answer an escapee's registration: a supervisor that does not answer
// within it is one that does not read (see availableLocked), which status
// reports.
const escapeeAnswerWait = 2 * time.Second

// awaitEscapees waits until the supervisor answered the registration of
// each escapee found under r, so that the members Members lists (a
// forking unit's main process among them) die with the owner from the
// moment they are listed; at most escapeeAnswerWait.
func (o *Owner) awaitEscapees(r *reg) {
	o.mu.Lock()
	var waits []chan struct{}
	for _, e := range r.esc {
		if e.answered != nil {
			waits = append(waits, e.answered)
		}
	}
	o.mu.Unlock()
	bound := time.NewTimer(escapeeAnswerWait)
	defer bound.Stop()
	for _, c := range waits {
		select {
		case <-c:
		case <-bound.C:
			return
		}
	}
}

// list is Members's listing of r, without a scan.
func (o *Owner) list(r *reg) []proc.Identity {
	o.mu.Lock()
	gs := []Group{r.g}
	for _, e := range r.esc {
		gs = append(gs, e.g)
	}
	o.mu.Unlock()
	var pids []int
	for _, g := range gs {
		switch {
		case g.Cgroup != "":
			pids = append(pids, cgroupProcs(g.Cgroup)...)
		case g.PGID > 1 && !groupEmpty(g):
			m, _ := proc.GroupMembers(g.PGID)
			pids = append(pids, m...)
		}
	}
	slices.Sort(pids)
	pids = slices.Compact(pids)
	out := make([]proc.Identity, 0, len(pids))
	for _, pid := range pids {
		if st, err := proc.ReadStat(pid); err != nil || st.Zombie() {
			continue
		}
		if id, err := proc.Read(pid); err == nil {
			out = append(out, id)
		}
	}
	return out
}

// StopMain stops g the way systemd stops a forking service: sig goes to
// main alone (the daemon's main process, identity-checked: a recycled pid
// is never signalled), which is expected to take the rest of the group
// down with it; after grace, whatever is left of the group (its cgroup, or
// its process group and escapees) is KILLed, and StopMain waits until it
// is empty (or ctx ends), then releases it as Stop does. A zero main is
// Stop.
func (o *Owner) StopMain(ctx context.Context, g Group, main proc.Identity, sig syscall.Signal, grace time.Duration) error {
	var err error
	rerr := o.StopAll(ctx, []StopOrder{{Group: g, Main: main, Signal: sig, Grace: grace}}, nil, func(_ int, e error) { err = e })
	return cmp.Or(err, rerr)
}

// signalIdentity sends sig to id's process (SignalProcess), if it is
// still there.
func signalIdentity(id proc.Identity, sig syscall.Signal) { _ = SignalProcess(id, sig) }

// finishStop waits up to s.Grace for r to be empty, KILLs what is left and
// waits for empty (until ctx ends): the end of each group's stop in
// StopAll, which releases the registered groups of the batch once all are
// done. ev, when not nil, reports changes of r's cgroup.
//
// late, when not nil (pgroup mode, a spawn's group), is asked for a scan
// once r looks empty: a process that left the group after StopAll's scan
// (a child the unit forked on its stop signal, which never got it, then
// setsid) is outside the group at that look, re-parented to the owner. The
// scan registers it under r, and it gets the stop signal, or KILL once the
// grace is over, and is waited for as the group was.
func (o *Owner) finishStop(ctx context.Context, r *reg, s StopOrder, ev *lazyEvents, late *lateScans) error {
	sig, end := s.Signal, time.Now().Add(s.Grace)
	// The one who sees it empty removes it, at that look: a survivor's
	// kept cgroup (or a released group's) has no registration to drop,
	// and a registered group's is dropped only once the whole batch is
	// done (its dropAll then finds it gone). A batch's removals are
	// spread over its groups' ends, while the others still exit,
	// instead of all of them waiting for the last (a hundred took 30 ms
	// and more between hermesd's last unit exit and its own).
	remove := o.tree.leaf(r.g.Cgroup)
	for {
		wait := time.Duration(-1)
		if sig != syscall.SIGKILL && s.Grace >= 0 {
			wait = max(time.Until(end), 0)
		}
		if !o.waitEmptyOn(ctx, r, wait, ev, remove) {
			if sig == syscall.SIGKILL {
				return fmt.Errorf("stop group %d of %s: %w", s.Group.PGID, s.Group.Unit, ctx.Err())
			}
			sig = syscall.SIGKILL
			o.signal(r, sig)
			continue
		}
		if late == nil {
			break
		}
		// The look's time is taken before ask: once the last group asks,
		// another's scan may begin at once, and it answers this one too.
		look := time.Now()
		late.ask(r)
		late.after(look)
		if o.regEmpty(r) {
			break
		}
		o.signal(r, sig)
	}
	return nil
}
