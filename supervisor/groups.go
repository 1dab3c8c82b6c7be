package supervisor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/units"
)

// findLocked returns the registration of g: same leader identity and pgid.
func (o *Owner) findLocked(g Group) *reg {
	for _, r := range o.regs {
		if r.g.PGID == g.PGID && r.g.Leader.PID == g.Leader.PID && r.g.Leader.StartTime == g.Leader.StartTime {
			return r
		}
	}
	return nil
}

// safeLocked refuses groups the supervisor must never kill.
func (o *Owner) safeLocked(g Group) error {
	switch {
	case g.PGID <= 1:
		return fmt.Errorf("group %d of %s: pgid must be > 1: %w", g.PGID, g.Unit, ErrUnsafe)
	case g.PGID == o.pgid || g.PGID == o.self.PID:
		return fmt.Errorf("group %d of %s is the owner's own group: %w", g.PGID, g.Unit, ErrUnsafe)
	case o.pipe != nil && g.PGID == o.pipe.PID():
		return fmt.Errorf("group %d of %s is the supervisor's: %w", g.PGID, g.Unit, ErrUnsafe)
	}
	return nil
}

// Own registers groups that something else started (a previous gateway, an
// adopt command): they now die with this owner. Each group must be safe
// (pgid > 1, not the owner's or the supervisor's), its recorded leader must
// still be the same process (pid and start time, checked now: ErrUnsafe for
// a recycled pid, proc.ErrGone for an exit), and it must still have members;
// its ledger entry (matched by leader identity, or added) is marked
// "adopted" under this owner. A cgroup outside the hermes hierarchy is not
// used: the group is then contained as a process group. Like SpawnOwned,
// Own counts a group only once the supervisor accepted it.
//
// All or none: when one group fails its checks or is refused (or the
// supervisor cannot be asked), none is owned, those registered already are
// taken back, and the error says which group and why. A group owned
// already is left as it is.
func (o *Owner) Own(ctx context.Context, groups ...Group) error {
	checked, err := o.checkOwn(groups)
	if err != nil {
		return err
	}
	regs, sents, err := o.registerOwn(checked)
	if err != nil {
		return err
	}
	for i, r := range regs {
		if err := o.confirm(ctx, r, sents[i]); err != nil {
			o.takeBack(regs)
			return fmt.Errorf("own group %d of %s: %w", r.g.PGID, r.g.Unit, err)
		}
	}
	if o.jr == nil || len(regs) == 0 {
		return nil
	}
	return o.jr.do(ctx, func(es []ledger.Entry) []ledger.Entry {
		for _, r := range regs {
			es = adoptedEntry(es, r.g, o.self, o.opts.Role)
		}
		return es
	})
}

// checkOwn holds groups against the kernel, outside the owner's lock (it
// reads /proc): each group safe, its leader the recorded process, with
// members.
// It returns the groups as Own registers them (a foreign cgroup dropped).
func (o *Owner) checkOwn(groups []Group) ([]Group, error) {
	out := make([]Group, 0, len(groups))
	for _, g := range groups {
		o.mu.Lock()
		err := o.safeLocked(g)
		g = o.foreignCgroupLocked(g)
		o.mu.Unlock()
		if err == nil {
			err = checkLeader(g)
		}
		if err != nil {
			return nil, err
		}
		if groupEmpty(g) {
			return nil, fmt.Errorf("own group %d of %s: %w", g.PGID, g.Unit, proc.ErrGone)
		}
		out = append(out, g)
	}
	return out, nil
}

// registerOwn registers the groups not registered yet, under one hold of
// the lock, and returns them with what was sent for each; on any failure
// none stays registered.
func (o *Owner) registerOwn(groups []Group) (regs []*reg, sents []sent, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil, nil, ErrClosed
	}
	defer func() {
		if err != nil {
			for _, r := range regs {
				o.unregisterLocked(r)
			}
			regs, sents = nil, nil
		}
	}()
	for _, g := range groups {
		if err := o.safeLocked(g); err != nil {
			return regs, sents, err
		}
		if o.findLocked(g) != nil {
			continue
		}
		r := &reg{id: fmt.Sprintf("a%d", o.nextLocked()), g: g}
		s, err := o.registerLocked(r)
		if err != nil {
			return regs, sents, fmt.Errorf("own group %d of %s: %w", g.PGID, g.Unit, err)
		}
		regs, sents = append(regs, r), append(sents, s)
	}
	return regs, sents, nil
}

// takeBack unregisters regs, a failed Own's.
func (o *Owner) takeBack(regs []*reg) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range regs {
		o.unregisterLocked(r)
	}
}

// adoptedEntry marks g's ledger entry (by leader identity) adopted by
// self in role, adding one when es holds none.
func adoptedEntry(es []ledger.Entry, g Group, self proc.Identity, role units.Role) []ledger.Entry {
	found := false
	for i := range es {
		if es[i].Leader.PID == g.Leader.PID && es[i].Leader.StartTime == g.Leader.StartTime {
			es[i].Owner, es[i].Role, es[i].State, found = self, role, ledger.Adopted, true
		}
	}
	if !found {
		es = append(es, ledger.Entry{Unit: g.Unit, Leader: g.Leader, PGID: g.PGID, Cgroup: g.Cgroup,
			Owner: self, Role: role, Ownership: units.Owned, Spawned: time.Now().UTC(), State: ledger.Adopted})
	}
	return es
}

// Release unregisters groups: they outlive the owner. Their ledger entries
// are marked "released". A group not registered here fails with ErrUnknown
// (the others are still released). While the supervisor cannot take lines
// (stopped), Release fails with the reason and changes nothing: a release
// the supervisor never read would not outlive the owner. If the supervisor
// stops after the release was sent, Release returns the reason, and the
// release takes effect when the supervisor reads it.
func (o *Owner) Release(ctx context.Context, groups ...Group) error {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return ErrClosed
	}
	if err := o.availableLocked(); err != nil {
		o.mu.Unlock()
		return fmt.Errorf("release: %w", err)
	}
	var errs []error
	var done []Group
	var acks []<-chan error
	var counts []int
	for _, g := range groups {
		r := o.findLocked(g)
		if r == nil {
			errs = append(errs, fmt.Errorf("release group %d of %s: %w", g.PGID, g.Unit, ErrUnknown))
			continue
		}
		ack, n := o.unregisterLocked(r)
		acks, counts = append(acks, ack), append(counts, n)
		done = append(done, g)
	}
	o.mu.Unlock()
	for i, ack := range acks {
		// An answer lost with its supervisor is no failure: the next one
		// is given only what is still registered.
		if err := o.await(ctx, ack, counts[i]); err != nil && !errors.As(err, new(*lostError)) {
			errs = append(errs, fmt.Errorf("release group %d of %s: not confirmed: %w", done[i].PGID, done[i].Unit, err))
		}
	}
	if o.jr != nil && len(done) > 0 {
		// Queued after the records of these spawns, if those still trail:
		// the mark cannot be overtaken by them.
		errs = append(errs, o.jr.do(ctx, func(es []ledger.Entry) []ledger.Entry {
			for _, g := range done {
				for i := range es {
					if es[i].Leader == g.Leader || es[i].Leader.PID == g.Leader.PID && es[i].Leader.StartTime == g.Leader.StartTime {
						es[i].State = ledger.Released
					}
				}
			}
			return es
		}))
	}
	return errors.Join(errs...)
}

// ReleaseOnceEmpty unregisters g once nothing is left in it (at once if it
// is empty now, else when the janitor sees it empty), then removes its
// ledger entry and its cgroup. It does not block.
func (o *Owner) ReleaseOnceEmpty(ctx context.Context, g Group) error {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return ErrClosed
	}
	r := o.findLocked(g)
	if r == nil {
		o.mu.Unlock()
		return fmt.Errorf("release group %d of %s: %w", g.PGID, g.Unit, ErrUnknown)
	}
	r.onceEmpty = true
	o.mu.Unlock()
	if o.regEmpty(r) {
		return o.drop(ctx, r)
	}
	o.poke() // the janitor polls it until it is empty
	return nil
}

// Stop sends sig to every member of g (identity-checked: a cgroup member is
// signalled through a pidfd after checking it is still in the cgroup; a
// process group only while its id is not a recycled leader's), waits up to grace
// for the group to be empty, sends KILL to what is left, waits for empty
// (until ctx ends), then releases it as ReleaseOnceEmpty does. Escapee
// groups found under g are stopped with it. A group that is empty when
// Stop returns is a success (nil), whoever released it: Stop itself, or
// the janitor when the leader's exit came first.
func (o *Owner) Stop(ctx context.Context, g Group, sig syscall.Signal, grace time.Duration) error {
	r, err := o.stopping(g)
	if err != nil {
		return err
	}
	o.signal(r, sig)
	return o.finishStop(ctx, r, g, grace)
}

// stopping is the registration Stop and StopMain act on: g's, or for a
// group not registered here (a re-adopted survivor) one made for the stop,
// in which a cgroup from outside our hierarchy is not trusted (the process
// group is signalled only while its leader id is not a stranger's). In
// pgroup mode the escapees found now are stopped with their spawn.
func (o *Owner) stopping(g Group) (*reg, error) {
	o.mu.Lock()
	r := o.findLocked(g)
	if r == nil {
		r = &reg{g: o.foreignCgroupLocked(g)}
		if err := o.safeLocked(g); err != nil {
			o.mu.Unlock()
			return nil, err
		}
	}
	o.mu.Unlock()
	if o.mode == ModePGroup && r.key != "" {
		o.scan()
	}
	return r, nil
}

// Empty reports whether nothing is left in g (its cgroup, or its process
// group and the escapee groups found under it).
func (o *Owner) Empty(g Group) bool {
	o.mu.Lock()
	r := o.findLocked(g)
	o.mu.Unlock()
	if r == nil {
		return groupEmpty(g)
	}
	return o.regEmpty(r)
}

func (o *Owner) regEmpty(r *reg) bool {
	o.mu.Lock()
	gs := []Group{r.g}
	for _, e := range r.esc {
		gs = append(gs, e.g)
	}
	o.mu.Unlock()
	for _, g := range gs {
		if !groupEmpty(g) {
			return false
		}
	}
	return true
}

// groupEmpty: a cgroup is empty when unpopulated; a process group when it
// has no live member, or when its id now belongs to a stranger (a live
// process with pid == pgid and another start time than the leader's).
func groupEmpty(g Group) bool {
	if g.Cgroup != "" {
		return !populated(g.Cgroup)
	}
	if g.PGID <= 1 {
		return true
	}
	if g.Leader.PID == g.PGID && g.Leader.StartTime != 0 {
		if st, err := proc.ReadStat(g.PGID); err == nil && st.StartTime != g.Leader.StartTime {
			return true
		}
	}
	if errors.Is(syscall.Kill(-g.PGID, 0), syscall.ESRCH) {
		return true // not even a zombie is left: no need to scan /proc
	}
	// kill(-pgid, 0) also succeeds while only zombies are left (orphans
	// stay zombies forever where init does not reap them): a zombie is no
	// member, and GroupMembers skips them.
	m, err := proc.GroupMembers(g.PGID)
	return err == nil && len(m) == 0
}

// signal sends sig to r's members: each process of its cgroup (KILL:
// cgroup.kill), or its process group if the leader is not a stranger; and
// likewise to its escapee groups.
func (o *Owner) signal(r *reg, sig syscall.Signal) {
	o.mu.Lock()
	gs := []Group{r.g}
	for _, e := range r.esc {
		gs = append(gs, e.g)
	}
	o.mu.Unlock()
	for _, g := range gs {
		if g.Cgroup != "" {
			if sig == syscall.SIGKILL && killCgroup(g.Cgroup) == nil {
				continue
			}
			for _, pid := range cgroupProcs(g.Cgroup) {
				signalMember(pid, g.Cgroup, sig)
			}
			continue
		}
		if g.PGID <= 1 || groupEmpty(g) {
			continue
		}
		syscall.Kill(-g.PGID, sig)
	}
}

// emptyPollEvery is how often waitEmpty looks at a group whose end no
// event reports.
const emptyPollEvery = 5 * time.Millisecond

// waitEmpty waits until r is empty (true), or for d (d < 0: until ctx
// ends). A spawned leader's reaping is an event (r.waited, closed by its
// pidfd waiter): the group is looked at the moment it comes, which is when
// the usual group, a leader alone, empties. What else may be left (a
// leader's children, escapees, a cgroup's other members) gives no event
// for a process group, so it is polled every emptyPoll.
func (o *Owner) waitEmpty(ctx context.Context, r *reg, d time.Duration) bool {
	var deadline <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		deadline = t.C
	}
	o.mu.Lock()
	waited := r.waited
	o.mu.Unlock()
	tk := time.NewTicker(cmp.Or(o.emptyPoll, emptyPollEvery))
	defer tk.Stop()
	for {
		if o.regEmpty(r) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-deadline:
			return o.regEmpty(r)
		case <-waited:
			waited = nil // once: a closed channel is always ready
		case <-tk.C:
		}
	}
}

// drop unregisters r, removes its ledger entry, and its cgroup if hermes
// made it (its own subtree's, or a kept one re-adopted with Own).
func (o *Owner) drop(ctx context.Context, r *reg) error {
	o.mu.Lock()
	if o.regs[r.id] != r {
		o.mu.Unlock()
		return nil
	}
	o.unregisterLocked(r)
	o.mu.Unlock()
	if o.tree.leaf(r.g.Cgroup) {
		removeEmpty(r.g.Cgroup)
	}
	if o.jr == nil {
		return nil
	}
	// Queued after the spawn's record, if that still trails: a record
	// removed before it was written is never written afterwards.
	return o.jr.do(ctx, func(es []ledger.Entry) []ledger.Entry {
		return slices.DeleteFunc(es, func(e ledger.Entry) bool {
			return e.Leader.PID == r.g.Leader.PID && e.Leader.StartTime == r.g.Leader.StartTime && e.PGID == r.g.PGID
		})
	})
}

// tidy drops the groups whose leader exited (or that asked for it) once
// they are empty. In pgroup mode it first looks for escapees (and reaps
// zombies, see scan) when asked (scan: SIGCHLD) or when groups wait to be
// dropped: an escapee keeps its spawn registered.
func (o *Owner) tidy(scan bool) {
	o.mu.Lock()
	var pending []*reg
	spawned := false
	for _, r := range o.regs {
		if r.leaderGone || r.onceEmpty {
			pending = append(pending, r)
		}
		spawned = spawned || r.key != ""
	}
	hook := o.tidyScanned
	o.mu.Unlock()
	scanned := o.mode == ModePGroup && (scan || len(pending) > 0) && spawned
	if scanned {
		o.scan() // before dropping: an escapee keeps its spawn's registration
	}
	if hook != nil && len(pending) > 0 {
		hook()
	}
	var empty []*reg
	for _, r := range pending {
		if o.regEmpty(r) {
			empty = append(empty, r)
		}
	}
	// A process that left its group (setsid) after the scan and before
	// the look that found the group empty was outside it at that look: a
	// scan after the look finds it, and its spawn stays registered.
	if scanned && len(empty) > 0 {
		o.scan()
		empty = slices.DeleteFunc(empty, func(r *reg) bool { return !o.regEmpty(r) })
	}
	for _, r := range empty {
		if err := o.drop(o.ctx, r); err != nil {
			o.opts.Logf("supervisor: release %s group %d: %v", r.g.Unit, r.g.PGID, err)
		}
	}
}
