package supervisor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/units"
)

// findLocked returns the registration of g: same leader identity and pgid.
func (o *Owner) findLocked(g Group) *reg {
	if rs := o.byGroup[groupKeyOf(g)]; len(rs) > 0 {
		return rs[0]
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
	o.pendLocked(r, false)
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
// the janitor when the leader's exit came first. Stop is StopAll of one
// group.
func (o *Owner) Stop(ctx context.Context, g Group, sig syscall.Signal, grace time.Duration) error {
	var err error
	rerr := o.StopAll(ctx, []StopOrder{{Group: g, Signal: sig, Grace: grace}}, nil, func(_ int, e error) { err = e })
	return cmp.Or(err, rerr)
}

// StopOrder is one group of a StopAll: Signal to every member of Group
// (as Stop), or, when Main is not zero, to Main alone (as StopMain); KILL
// to what is left once Grace is over.
type StopOrder struct {
	Group  Group
	Main   proc.Identity
	Signal syscall.Signal
	Grace  time.Duration
}

// StopAll stops the groups of orders as Stop (or StopMain, for an order
// with a Main) stops one, the whole batch at once, in this order:
//  1. In pgroup mode, one look for escapees (not one per group): those
//     found are registered under their spawn and signalled with it.
//  2. Every group gets its signal, one after the other with no wait
//     between (each identity-checked as Stop does), before any is waited
//     for; in cgroup mode every spawned leader first (signalLeader), then
//     the other members of each group.
//  3. Each group is waited for on its own, on events: its leader's
//     reaping, and in cgroup mode its cgroup.events (inotify); only a
//     process group some other member outlives its leader in is polled.
//     Once its own grace is over it is KILLed.
//  4. Once every group is done, the bookkeeping of them all at once: the
//     registered groups are released (unregistered, their cgroups
//     removed, their ledger entries removed in one ledger write). Until
//     then the janitor leaves them alone (a leader's exit does not have
//     it release its group), so that no ledger write, a read of the
//     ledger and of /proc, competes with the groups' exits.
//
// signalled, when not nil, is called once every group has had its signal
// and before any is waited for: what its caller has to do for the stop
// (a log line for each, waking its own watchers) then does not delay the
// signals. done(i, err) is called for orders[i] once its group is empty
// (nil), or when its stop failed (an unsafe group, ctx ended), from a
// goroutine of StopAll's: a group that ignores its signal delays no
// other's done. StopAll returns once every done has returned and the
// groups are released: the error is the release's (the ledger write);
// a group whose stop failed stays registered, and the janitor's again.
func (o *Owner) StopAll(ctx context.Context, orders []StopOrder, signalled func(), done func(i int, err error)) error {
	regs, errs := o.stopping(orders)
	var late *lateScans
	for i := range orders {
		if late == nil && errs[i] == nil && o.mode == ModePGroup && regs[i].key != "" {
			late = &lateScans{o: o}
		}
	}
	if late != nil {
		var spawns []*reg
		for i, r := range regs {
			if errs[i] == nil && r.key != "" {
				spawns = append(spawns, r)
			}
		}
		late.batch(spawns)
	}
	defer o.release(regs)
	// The leader's signal, sent first (see signalLeader), or in pgroup
	// mode the whole group's, before the scan (see signalAlone).
	sent := make([]bool, len(orders))
	if late != nil {
		o.signalAlone(orders, regs, errs, sent)
		o.scanOf(late.regs...)
	}
	for i, s := range orders {
		if errs[i] == nil && s.Main.IsZero() && !sent[i] {
			sent[i] = o.signalLeader(regs[i], s.Signal)
		}
	}
	for i, s := range orders {
		switch {
		case errs[i] != nil:
		case s.Main.IsZero():
			o.signalRest(regs[i], s.Signal, sent[i])
		default:
			signalIdentity(s.Main, s.Signal) // forking: the stop signal to the main process, KILL for the rest
		}
	}
	if signalled != nil {
		signalled()
	}
	ev := &lazyEvents{}
	var wg sync.WaitGroup
	for i, s := range orders {
		if errs[i] != nil {
			done(i, errs[i])
			continue
		}
		wg.Go(func() {
			l := late
			if regs[i].key == "" {
				l = nil
			}
			errs[i] = o.finishStop(ctx, regs[i], s, ev, l)
			done(i, errs[i])
		})
	}
	wg.Wait()
	ev.close()
	var empty []*reg
	for i, r := range regs {
		if errs[i] == nil && r.id != "" {
			empty = append(empty, r)
		}
	}
	// Their cgroups are gone: each finishStop that saw its group empty
	// removed it. Another rmdir each, failing, cost a stop of 5000 units
	// 30 ms before StopAll could return.
	return o.dropAll(ctx, empty, false)
}

// release ends StopAll's hold on regs: those it did not drop (their stop
// failed) go back to the janitor, which is woken for the scan it was
// owed meanwhile, if any (see scanAskedLocked).
func (o *Owner) release(regs []*reg) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range regs {
		if r != nil {
			o.holdLocked(r, false)
		}
	}
	o.stopAlls--
	if o.stopAlls == 0 && o.scanOwed {
		o.poke()
	}
}

// lazyEvents is a StopAll's cgroupEvents, opened by the first group that
// needs one (a cgroup with members left after its leader, or with no
// leader of ours to wait for): the usual batch, leaders alone, needs none.
type lazyEvents struct {
	once sync.Once
	ev   *cgroupEvents // nil until get, and when it cannot be opened (the cgroups are polled)
}

func (l *lazyEvents) get() *cgroupEvents {
	l.once.Do(func() { l.ev, _ = newCgroupEvents() })
	return l.ev
}

// close closes the instance, if get opened one; called once every waiter
// is done.
func (l *lazyEvents) close() {
	l.once.Do(func() {})
	if l.ev != nil {
		l.ev.close()
	}
}

// stopping is the registration StopAll acts on for each order: its
// group's, or for a group not registered here (a re-adopted survivor) one
// made for the stop, in which a cgroup from outside our hierarchy is not
// trusted (the process group is signalled only while its leader id is not
// a stranger's); an unsafe group's error in place of one. The StopAll is
// counted (stopAlls) until its release.
func (o *Owner) stopping(orders []StopOrder) ([]*reg, []error) {
	regs := make([]*reg, len(orders))
	errs := make([]error, len(orders))
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stopAlls++ // until release
	for i, s := range orders {
		g := s.Group
		r := o.findLocked(g)
		if r != nil {
			o.holdLocked(r, true)
		} else {
			r = &reg{g: o.foreignCgroupLocked(g)}
			if err := o.safeLocked(g); err != nil {
				r = nil
				errs[i] = err
			}
		}
		regs[i] = r
	}
	return regs, errs
}

// groupKey is what findLocked matches a registration's group by (byGroup).
type groupKey struct {
	pgid, leader int
	start        uint64
}

func groupKeyOf(g Group) groupKey {
	return groupKey{g.PGID, g.Leader.PID, g.Leader.StartTime}
}

// Empty reports whether nothing is left in g (its cgroup, or its process
// group and the escapee groups found under it). In pgroup mode a spawn
// that looks empty is looked at again after a scan, as Members does: its
// last process may have left the group (setsid) since the last scan, and
// an escapee not yet found is not nothing.
func (o *Owner) Empty(g Group) bool {
	o.mu.Lock()
	r := o.findLocked(g)
	o.mu.Unlock()
	if r == nil {
		return groupEmpty(g)
	}
	if !o.regEmpty(r) {
		return false
	}
	if o.mode != ModePGroup || r.key == "" {
		return true
	}
	o.scanOf(r)
	o.awaitEscapees(r)
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

// removedIfEmpty is regEmpty for a registration whose cgroup is removed
// once empty, and removes it when it is: rmdir(2) of an empty cgroup is the look
// and the removal in one system call, where reading cgroup.events took
// three before the rmdir. The kernel refuses it (EBUSY) while a process
// is left, and also while a cgroup the unit made is below: then
// cgroup.events answers, as for any group.
func (o *Owner) removedIfEmpty(r *reg) bool {
	o.mu.Lock()
	dir, alone := r.g.Cgroup, len(r.esc) == 0
	o.mu.Unlock()
	if alone && dir != "" && removeEmpty(dir) {
		return true
	}
	if !o.regEmpty(r) {
		return false
	}
	if dir != "" {
		removeEmpty(dir) // the last process left since the rmdir, or a cgroup below is left
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
		if st, err := proc.ReadStat(g.PGID); err == nil {
			if st.StartTime != g.Leader.StartTime {
				return true
			}
			if !st.Zombie() {
				return false // the leader itself is a live member: no need to scan /proc
			}
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
//
// A cgroup member is signalled through a pidfd opened before its
// membership is checked (signalMember), except the leader while it is
// still to be reaped (r.waited open when looked at after the pidfd was
// opened): the pid of an unreaped child of ours cannot name another
// process, so the pidfd names the leader, and its cgroup needs no reading.
func (o *Owner) signal(r *reg, sig syscall.Signal) { o.signalRest(r, sig, false) }

// signalLeader sends sig to r's leader alone, when r has a cgroup and its
// leader is a spawn still to be reaped (see signal), and reports whether
// it did: StopAll gives every leader of its batch its signal this way
// first, a pidfd's open and send each, before it reads any group's
// members (a read of its cgroup.procs, then a check of each member), so
// that the usual unit, a leader alone, is not kept waiting behind the
// reads of the groups before it in the batch (at 100 units those reads
// took more than half the time of the signals). Not for KILL (cgroup.kill
// ends the whole cgroup at once) nor a process group (one kill reaches
// every member).
func (o *Owner) signalLeader(r *reg, sig syscall.Signal) bool {
	o.mu.Lock()
	g, waited := r.g, r.waited
	o.mu.Unlock()
	if g.Cgroup == "" || sig == syscall.SIGKILL || waited == nil {
		return false
	}
	o.signalHook(g.Leader.PID)
	return signalUnreaped(g.Leader.PID, waited, sig)
}

// signalHook tells a test's hook that pid is about to get a signal.
func (o *Owner) signalHook(pid int) {
	if o.hooks != nil && o.hooks.signalled != nil {
		o.hooks.signalled(pid)
	}
}

// signalRest is signal, but for r's leader when leaderSent (signalLeader
// gave it sig already).
func (o *Owner) signalRest(r *reg, sig syscall.Signal, leaderSent bool) {
	o.mu.Lock()
	gs := []Group{r.g}
	for _, e := range r.esc {
		gs = append(gs, e.g)
	}
	waited := r.waited
	o.mu.Unlock()
	mount := ""
	if o.tree != nil {
		mount = o.tree.mount
	}
	for i, g := range gs {
		if g.Cgroup != "" {
			if sig == syscall.SIGKILL && killCgroup(g.Cgroup) == nil {
				continue
			}
			if mount == "" {
				mount = proc.CgroupMount()
			}
			for _, pid := range cgroupProcs(g.Cgroup) {
				if i == 0 && leaderSent && pid == g.Leader.PID {
					continue // r's leader, which signalLeader gave sig
				}
				o.signalHook(pid)
				if pid != g.Leader.PID || !signalUnreaped(pid, waited, sig) {
					signalMember(pid, g.Cgroup, mount, sig)
				}
			}
			continue
		}
		if g.PGID <= 1 || (i == 0 && leaderSent) || groupEmpty(g) {
			continue // leaderSent: signalAlone gave r's group sig already
		}
		o.signalHook(g.PGID)
		syscall.Kill(-g.PGID, sig)
	}
}

// signalAlone gives (pgroup mode) each spawn's group of a StopAll whose
// leader is alone in it its signal before the batch's scan, and marks it
// in sent. The scan comes before the first signal so that the parent
// links of what left a group are read before a signal ends the parents;
// a group that is its leader alone has no such link to lose, and need not
// wait for the scan (at 100 idle units, the scan of the whole table came
// before every TERM). Alone means: the leader is an unreaped spawn of
// ours with no child, no escapee of it is registered, and no orphan of the
// owner is in its session. Any other member of its group would descend
// from the leader, or have been re-parented to the owner (the subreaper)
// keeping the session the unit leads. A child forked after this look, on
// the signal, is the late scan's (finishStop).
func (o *Owner) signalAlone(orders []StopOrder, regs []*reg, errs []error, sent []bool) {
	kids, err := proc.Children(o.self.PID)
	if err != nil || !o.reaping.Load() {
		return
	}
	o.mu.Lock()
	var orphans []int
	for _, pid := range kids {
		if !o.leaders[pid] && !o.supPids[pid] {
			orphans = append(orphans, pid)
		}
	}
	o.mu.Unlock()
	taken := map[int]bool{} // the sessions of the owner's orphans
	for _, pid := range orphans {
		if st, err := proc.ReadStat(pid); err == nil {
			taken[st.SID] = true
		}
	}
	for i, s := range orders {
		r := regs[i]
		if errs[i] != nil || !s.Main.IsZero() {
			continue
		}
		o.mu.Lock()
		g, waited, alone := r.g, r.waited, r.key != "" && len(r.esc) == 0 && r.session > 1 && !taken[r.session]
		o.mu.Unlock()
		if !alone || g.Cgroup != "" || waited == nil || g.PGID != g.Leader.PID {
			continue
		}
		if c, err := proc.Children(g.Leader.PID); err != nil || len(c) > 0 {
			continue
		}
		select {
		case <-waited:
			continue // reaped: its pid, the group's id, may be another's now
		default:
		}
		o.signalHook(g.PGID)
		syscall.Kill(-g.PGID, s.Signal)
		sent[i] = true
	}
}

// signalUnreaped sends sig to pid, a spawned leader whose waiter closes
// waited once it has reaped it, and reports true, if it is still to be
// reaped when looked at after its pidfd was opened; false (nothing sent)
// otherwise, or when waited is nil (no waiter: not our child).
func signalUnreaped(pid int, waited <-chan struct{}, sig syscall.Signal) bool {
	if waited == nil {
		return false
	}
	h, err := proc.OpenHandle(pid)
	if err != nil {
		return false
	}
	defer h.Close()
	select {
	case <-waited:
		return false // reaped: the pid may be another process's now
	default:
	}
	h.Signal(sig)
	return true
}

// emptyPollEvery is how often waitEmpty looks at a process group whose
// leader has been reaped but which is not empty yet; slowPollEvery while
// its leader is still to be reaped (the reaping is the event, the look
// only a safety net).
const (
	emptyPollEvery = 5 * time.Millisecond
	slowPollEvery  = 100 * time.Millisecond
)

// waitEmpty waits until r is empty (true), or for d (d < 0: until ctx
// ends), as waitEmptyOn does without cgroup events.
func (o *Owner) waitEmpty(ctx context.Context, r *reg, d time.Duration) bool {
	return o.waitEmptyOn(ctx, r, d, nil, false)
}

// waitEmptyOn waits until r is empty (true), or for d (d < 0: until ctx
// ends). Each end of a group it can be told of is an event:
//   - a spawned leader's reaping (r.waited, closed by its pidfd waiter):
//     until it comes, the group is not looked at (its leader is in it, or
//     a moment from being reaped), and with a leader alone, the usual
//     group, the look that follows it finds the group empty;
//   - with ev, each change of the cgroup.events of r's cgroup, which
//     covers every member: watched only when the group is not empty at
//     the leader's reaping (or there is no leader of ours to wait for).
//
// What else may be left of a process group (a leader's children,
// escapees) gives no event, so it is polled: every emptyPollEvery once the
// leader is reaped. Before, a look every slowPollEvery is the safety net
// of a group its leader left (setpgid).
//
// With remove, r's cgroup is removed once it is empty, and the removal is
// the look (see removedIfEmpty).
func (o *Owner) waitEmptyOn(ctx context.Context, r *reg, d time.Duration, ev *lazyEvents, remove bool) bool {
	empty := o.regEmpty
	if remove {
		empty = o.removedIfEmpty
	}
	var deadline <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		deadline = t.C
	}
	o.mu.Lock()
	waited, g := r.waited, r.g
	o.mu.Unlock()
	var changed <-chan struct{}
	watched := false
	var tk *time.Ticker
	every := time.Duration(0)
	defer func() {
		if tk != nil {
			tk.Stop()
		}
	}()
	for {
		if waited == nil {
			if empty(r) {
				return true
			}
			if !watched && ev != nil && g.Cgroup != "" {
				watched = true
				if e := ev.get(); e != nil {
					if ch, cancel, err := e.watch(g.Cgroup); err == nil {
						changed = ch
						defer cancel()
						continue // a change before the watch was not seen: look again
					}
				}
			}
		}
		var tick <-chan time.Time
		if changed == nil {
			want := emptyPollEvery
			if o.hooks != nil {
				want = cmp.Or(o.hooks.emptyPoll, want)
			}
			if waited != nil {
				want = max(want, slowPollEvery)
			}
			if want != every {
				if tk != nil {
					tk.Stop()
				}
				tk, every = time.NewTicker(want), want
			}
			tick = tk.C
		}
		select {
		case <-ctx.Done():
			return false
		case <-deadline:
			return empty(r)
		case <-waited:
			waited = nil // once: a closed channel is always ready
		case <-changed:
		case <-tick:
			if waited != nil && empty(r) {
				return true
			}
		}
	}
}

// drop unregisters r, removes its ledger entry, and its cgroup if hermes
// made it (its own subtree's, or a kept one re-adopted with Own).
func (o *Owner) drop(ctx context.Context, r *reg) error {
	return o.dropAll(ctx, []*reg{r}, true)
}

// dropAll drops regs as drop does, with one ledger change for them all
// (queued after the spawns' records, if those still trail: a record
// removed before it was written is never written afterwards), which looks
// each entry up among the groups dropped (a look at each of them for each
// entry took a clean stop of 5000 units 25 million steps, 27 ms on the
// ledger's writer before hermesd could exit). A reg no longer registered
// (dropped by another) is skipped. With rmdir false, the cgroups are not
// removed: the caller removed them.
func (o *Owner) dropAll(ctx context.Context, regs []*reg, rmdir bool) error {
	var gone []Group
	var drop []*reg
	o.mu.Lock()
	for _, r := range regs {
		if o.regs[r.id] != r {
			continue
		}
		drop = append(drop, r)
		gone = append(gone, r.g)
	}
	o.unregisterAllLocked(drop)
	o.mu.Unlock()
	for _, g := range gone {
		if rmdir && o.tree.leaf(g.Cgroup) {
			removeEmpty(g.Cgroup)
		}
	}
	if o.jr == nil || len(gone) == 0 {
		return nil
	}
	keys := make(map[groupKey]bool, len(gone))
	for _, g := range gone {
		keys[groupKeyOf(g)] = true
	}
	return o.jr.do(ctx, func(es []ledger.Entry) []ledger.Entry {
		return slices.DeleteFunc(es, func(e ledger.Entry) bool {
			return keys[groupKey{e.PGID, e.Leader.PID, e.Leader.StartTime}]
		})
	})
}

// tidy drops the groups whose leader exited (or that asked for it) once
// they are empty. In pgroup mode it first looks for escapees (and reaps
// zombies, see scan) when asked (scan) or when groups wait to be dropped:
// an escapee keeps its spawn registered. A timed scan reads the whole
// table; otherwise the scan is narrowed to the groups waiting to be
// dropped and the owner's orphans, where it can be (see narrowLocked):
// the zombies a scan reaps are the owner's children.
func (o *Owner) tidy(scan scanKind) {
	o.mu.Lock()
	pending := make([]*reg, 0, len(o.pending))
	for r := range o.pending {
		pending = append(pending, r)
	}
	spawned, looked := o.keyed > 0, len(o.pending)
	o.mu.Unlock()
	if h := o.hooks; h != nil && h.tidyLooked != nil {
		h.tidyLooked(looked)
	}
	scanned := o.mode == ModePGroup && (scan != noScan || len(pending) > 0) && spawned
	of := append([]*reg{}, pending...) // not nil: narrowed where it can be
	if scan == tableScan {
		of = nil
	}
	if scanned {
		o.scanAfter(time.Now(), of) // before dropping: an escapee keeps its spawn's registration
	}
	if h := o.hooks; h != nil && h.tidyScanned != nil && len(pending) > 0 {
		h.tidyScanned()
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
		o.scanAfter(time.Now(), of)
		empty = slices.DeleteFunc(empty, func(r *reg) bool { return !o.regEmpty(r) })
	}
	if err := o.dropAll(o.ctx, empty, true); err != nil {
		o.opts.Logf("supervisor: release of %d groups: %v", len(empty), err)
	}
}
