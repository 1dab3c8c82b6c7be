package supervisor

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
	"golang.org/x/sys/unix"
)

// scan (pgroup mode) finds escapees and reaps the orphans the owner, as a
// child subreaper, inherited from its groups.
//
// An escapee is a live process outside every registered group that
// descends from one. It is attributed to the registration (the spawn) it
// descends from, on evidence that names that spawn only, and its process
// group is registered under that spawn, so it dies with the owner, Stop
// waits for it, and it keeps the spawn registered until it is empty. Its
// environment is not needed: a daemon may erase it (env -i) or overwrite
// it with its process title (redis --daemonize). The evidence, in this
// order (see attribute):
//   - ancestry: its parent is a member of a registered group, an
//     escapee, or a descendant of one (as of this scan);
//   - its tags, when it kept them: this owner's EnvOwner and the spawn
//     key (EnvSpawn) of a registered group (the tags of another owner
//     mean it is that owner's: never taken); and its mark (see markOf),
//     which env -i and a process title leave;
//   - when it was re-parented to the owner (its parent exited): what the
//     last scan saw of it (lineage), the spawn's log file it holds open
//     as stdin, stdout or stderr, and the session it is in (each spawn
//     leads a session of its own, which a process leaves only by setsid);
//   - without a subreaper (the portable backend, darwin), when it was
//     re-parented to init or to an ancestor of the owner: what the last
//     scan saw of it, else its tags, and nothing weaker. An escapee whose
//     parent exited before any scan saw it, and that erased its tags, is
//     not found.
//
// Never the time it appeared at: two spawns started together cannot be
// told apart by it. A process no evidence names in the view of the
// registrations the scan took before it read the process table is
// weighed again against a view taken after the read (reweigh): a spawn
// registered in between, whose daemon was re-parented before the read,
// is in the second. A process re-parented to the owner that left the
// owner's session (any such descends from one of its spawns, other than
// the supervisors' helpers, which are never taken) and that no evidence
// names is an orphan: its group is registered with no unit (adoptOrphan),
// so that it dies with the owner, and no unit counts it as its own.
//
// Reaping: only zombies whose parent is the owner, that sit in a registered
// group (or are identified escapees), and that are not the leader of one of
// our spawns (os/exec's Cmd.Wait reaps those). Any other child of the owner
// may belong to an exec.Cmd elsewhere in the process and is never touched.
//
// Every caller wants a scan that begins after its call: callers that come
// while one runs share the next one (scanMu), whose view of the
// registrations is what the previous scans registered. Scans that ran at
// once from the same view each registered a new escapee again, and each
// read the whole process table.
func (o *Owner) scan() { o.scanAfter(time.Now(), nil) }

// scanOf is a scan for regs (see narrowLocked): it looks only where
// their escapees, and the owner's orphans, can be.
func (o *Owner) scanOf(regs ...*reg) { o.scanAfter(time.Now(), regs) }

// scanAfter returns once a scan that began after t has ended: the one that
// runs, if it began after t and read the whole table, or else the next
// (see scan). With regs, the next is narrowed to them where it can be
// (see narrowLocked); a scan of the whole table answers it all the same.
// regs nil asks for the whole table; empty (not nil), for the owner's
// orphans alone, where that can be narrowed.
// It returns when the scan that answered began.
func (o *Owner) scanAfter(t time.Time, regs []*reg) time.Time {
	o.scanMu.Lock()
	defer o.scanMu.Unlock()
	o.mu.Lock()
	done := o.scanDone
	if !o.narrowLocked(regs) {
		regs = nil
	}
	o.mu.Unlock()
	if done.After(t) {
		return done
	}
	return o.scanNow(regs)
}

// narrowLocked reports whether a scan for regs may read only what
// descends from the owner, past the leaders of the other spawns
// (ownedTable), instead of the whole process table. It may when the owner
// is the child subreaper, on Linux (the children of a process are read
// from /proc), and each of regs is a registered spawn that leads a
// session of its own. Then every process of such a spawn descends from
// its leader, or from one of the owner's orphans: an orphan of its tree
// is re-parented to the owner (or to a subreaper within it), and no
// process outside its session can join one of its groups. Escapees of
// other spawns are found by the timed scans, which read the whole table,
// as before.
//
// A batch of a quarter of the registrations or fewer reads less that way.
// A larger one reads most of the owner's tree: about four reads a process
// (its stat, its threads, their children), against one a process on the
// machine for the whole table. So it reads the tree only while the
// owner's groups are under a quarter of the processes the last scan of
// the whole table read: a stop of 10 units among a machine's hundreds of
// processes, not one of 5000.
func (o *Owner) narrowLocked(regs []*reg) bool {
	if regs == nil || !o.reaping.Load() || o.portable {
		return false
	}
	if len(regs) > max(len(o.regs)/4, 1) && 4*len(o.regs) >= o.tableSize {
		return false
	}
	for _, r := range regs {
		if o.regs[r.id] != r || r.key == "" || r.session <= 1 {
			return false
		}
	}
	return true
}

// scanNow is one scan (see scan); scanMu is held. With of, it reads only
// what ownedTable reads for them: it is not a scan of the whole table, so
// it neither counts for the timed scans nor answers those who want one.
// It returns when it began.
func (o *Owner) scanNow(of []*reg) time.Time {
	o.mu.Lock()
	began := time.Now()
	if of == nil {
		o.scanned = began
	}
	sn := o.snapshotLocked()
	o.mu.Unlock()
	if h := o.hooks; h != nil && h.scanViewed != nil {
		h.scanViewed()
	}
	var stats []proc.Stat
	var live map[int]proc.Stat
	var err error
	if of == nil {
		stats, live, err = processTable()
	} else {
		stats, live, err = o.ownedTable(sn, of)
		if h := o.hooks; h != nil {
			h.narrowScans.Add(1)
		}
	}
	if err != nil {
		return began
	}
	if !o.reaping.Load() {
		sn.adrift = adrift(live, o.self.PID)
	}
	owner := sn.descendants(stats, live, o.self.PID)
	mySID, _ := unix.Getsid(0)
	for _, st := range stats {
		if st.Zombie() {
			o.reapOrphan(sn, st)
			continue
		}
		r, orphan := o.escapeeOf(sn, st, owner, mySID)
		switch {
		case r != nil:
			o.adoptEscapee(r, st)
		case orphan:
			r = o.adoptOrphan(st)
		}
		if r != nil {
			sn.known[st.PGID] = r
			owner[st.PID] = r
		}
	}
	// What this scan attributed, for the next one; a narrow scan keeps
	// what the last ones saw of the processes it did not read.
	next := make(map[int]lineEntry, len(owner))
	if of != nil {
		in := make(map[*reg]bool, len(of))
		for _, r := range of {
			in[r] = true
		}
		o.mu.Lock()
		for pid, l := range o.lineage {
			if _, read := live[pid]; !read && !in[l.r] {
				next[pid] = l
			}
		}
		o.mu.Unlock()
	}
	for pid, r := range owner {
		next[pid] = lineEntry{start: live[pid].StartTime, r: r}
	}
	o.mu.Lock()
	o.lineage = next
	if of == nil {
		if began.After(o.scanDone) {
			o.scanDone = began
		}
		o.scanTook = time.Since(began)
		o.tableSize = len(stats)
	}
	o.mu.Unlock()
	return began
}

// ownedTable reads what a scan for regs looks at (see narrowLocked): the
// owner's children other than the leaders of other spawns and the
// supervisors', and all that descends from them, found by the children
// each process's threads forked. The owner's children are read again
// after the walk: a process re-parented to the owner while the walk ran
// may have left its old parent's list before that list was read, and is
// in the owner's by the second reading.
func (o *Owner) ownedTable(sn *scanView, regs []*reg) ([]proc.Stat, map[int]proc.Stat, error) {
	mine := make(map[int]bool, len(regs))
	for _, r := range regs {
		mine[r.g.Leader.PID] = true
	}
	var stats []proc.Stat
	live := map[int]proc.Stat{}
	seen := map[int]bool{o.self.PID: true}
	var queue []int
	roots := func() error {
		kids, err := proc.Children(o.self.PID)
		for _, pid := range kids {
			if !seen[pid] && !sn.helpers[pid] && (!sn.leaders[pid] || mine[pid]) {
				seen[pid] = true
				queue = append(queue, pid)
			}
		}
		return err
	}
	walk := func() {
		for len(queue) > 0 {
			pid := queue[0]
			queue = queue[1:]
			st, err := proc.ReadStat(pid)
			if err != nil {
				continue
			}
			stats = append(stats, st)
			if st.Zombie() {
				continue
			}
			live[pid] = st
			kids, _ := proc.Children(pid)
			for _, k := range kids {
				if !seen[k] {
					seen[k] = true
					queue = append(queue, k)
				}
			}
		}
	}
	for pass := range 2 {
		if err := roots(); err != nil && pass == 0 {
			return nil, nil, err
		}
		walk()
	}
	return stats, live, nil
}

// scanState is what the scans keep from one to the next (pgroup mode).
type scanState struct {
	subreaper sync.Once  // becomeSubreaper
	scanMu    sync.Mutex // held by the scan that runs (see scan)
	// reaping is set once the owner is the child subreaper: orphans of
	// its groups come to it. Without it they go to init (see scan).
	reaping  atomic.Bool
	lineage  map[int]lineEntry // guarded by Owner.mu; what the last scan attributed, by pid
	scanned  time.Time         // guarded by Owner.mu; when the last scan began
	scanDone time.Time         // guarded by Owner.mu; when the latest of the scans that ended began
	scanTook time.Duration     // guarded by Owner.mu; how long the last scan that ended took
	escPids  map[int]bool      // guarded by Owner.mu; escapee pids identified, reaped by the scan
	// tableSize is how many processes the last scan of the whole table
	// read (narrowLocked); guarded by Owner.mu.
	tableSize int
}

// lateScans coalesces the scans a StopAll's groups ask for once each
// looks empty (see finishStop): a scan that began after a group's look
// answers it, so the groups of a batch that empty together share one
// reading of the process table instead of one each.
type lateScans struct {
	mu   sync.Mutex
	o    *Owner
	done time.Time // guarded by mu: when the last scan that answered began
	regs []*reg    // the batch's groups: what its scans are narrowed to

	// The batch's groups that ask (see gather), set by batch before the
	// first ask; guarded by amu.
	amu   sync.Mutex
	left  int           // groups of the batch that have not asked yet
	asked map[*reg]bool // those that have
	all   chan struct{} // closed once left is 0; nil: no batch to gather
}

// batch makes l gather the late scans of regs (see gather).
func (l *lateScans) batch(regs []*reg) {
	l.regs = regs
	l.left, l.asked, l.all = len(regs), map[*reg]bool{}, make(chan struct{})
}

// ask records that r, a group of the batch, looked empty and is about to
// ask for its scan (after): the last of the batch to ask ends the others'
// gathering.
func (l *lateScans) ask(r *reg) {
	l.amu.Lock()
	defer l.amu.Unlock()
	if l.all == nil || l.asked[r] {
		return
	}
	l.asked[r] = true
	if l.left--; l.left == 0 {
		close(l.all)
	}
}

// after returns once a scan that began after t has ended, asked for
// after gather. One that runs when it is called answers it when it began
// after t (the janitor's): the group waits for its end, not for another
// after it.
func (l *lateScans) after(t time.Time) {
	l.gather()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done.After(t) {
		return // a scan of the batch's began after t
	}
	l.done = l.o.scanAfter(t, l.regs)
}

// gather waits, before a group's late scan is asked for, until every
// group of the batch has looked empty and asked (ask), for at most as
// long as the last scan took (the journal gathers its writes by the same
// rule). The groups of a batch got their signal together and mostly end
// moments apart: a scan begun at the first group's end was followed by
// one for the groups that ended during it, and another, each a read of
// the whole process table competing with the exits for the machine (at
// hermesd's clean stop of 10 units, 13 ms between the last unit's exit
// and its group found empty). Gathered, one scan that begins after every
// group's look answers them all. A group that ignores its signal delays
// the others' done by one scan's length at most.
func (l *lateScans) gather() {
	if l.all == nil {
		return
	}
	o := l.o
	o.mu.Lock()
	d := o.scanTook
	o.mu.Unlock()
	if o.hooks != nil && o.hooks.gather > 0 {
		d = o.hooks.gather
	}
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-l.all:
	case <-t.C:
	}
}

// scanView is what a scan knows of the owner's registrations, copied under
// mu so that the process table is read without it.
type scanView struct {
	known    map[int]*reg    // pgid → the registration it belongs to
	keys     map[string]*reg // spawn key → its registration
	marks    map[uint64]*reg // spawn mark → its registration
	sessions map[int]*reg    // session a spawn leads → its registration
	leaders  map[int]bool    // our spawns' leaders (os/exec reaps them)
	escPids  map[int]bool    // escapees already registered
	helpers  map[int]bool    // the supervisors' own groups
	spawns   []*reg          // registrations of our spawns
	prev     map[int]lineEntry
	// adrift (no subreaper: the portable backend, darwin) is where an
	// orphan of our groups goes: init, or a subreaper among the owner's
	// ancestors; nil when the owner is the subreaper.
	adrift map[int]bool
}

// adrift returns the pids an orphan of the owner me's groups may be
// re-parented to when me is not the child subreaper: 1 (init, launchd),
// and me's ancestors (one of them may be a subreaper).
func adrift(live map[int]proc.Stat, me int) map[int]bool {
	out := map[int]bool{1: true}
	for pid := live[me].PPID; pid > 1 && !out[pid]; pid = live[pid].PPID {
		out[pid] = true
	}
	return out
}

func (o *Owner) snapshotLocked() *scanView {
	// Sized up front: each scan builds these anew from every
	// registration, and growing them was half of that work.
	sn := &scanView{known: make(map[int]*reg, len(o.regs)), keys: make(map[string]*reg, o.keyed), marks: make(map[uint64]*reg, o.keyed),
		sessions: make(map[int]*reg, o.keyed), spawns: make([]*reg, 0, o.keyed),
		leaders: make(map[int]bool, len(o.leaders)), escPids: make(map[int]bool, len(o.escPids)), helpers: map[int]bool{}, prev: o.lineage}
	for pid := range o.leaders {
		sn.leaders[pid] = true
	}
	for pid := range o.escPids {
		sn.escPids[pid] = true
	}
	for pid := range o.supPids {
		sn.helpers[pid] = true
	}
	for _, r := range o.regs {
		sn.known[r.g.PGID] = r
		for _, e := range r.esc {
			sn.known[e.g.PGID] = r
		}
		if r.key == "" {
			continue
		}
		sn.keys[r.key] = r
		sn.spawns = append(sn.spawns, r)
		if r.mark != 0 {
			sn.marks[r.mark] = r
		}
		if r.session > 1 {
			sn.sessions[r.session] = r
		}
	}
	return sn
}

// processTable reads every process's stat, and the live ones by pid.
func processTable() ([]proc.Stat, map[int]proc.Stat, error) {
	pids, err := proc.Pids()
	if err != nil {
		return nil, nil, err
	}
	stats := make([]proc.Stat, 0, len(pids))
	live := map[int]proc.Stat{}
	for _, pid := range pids {
		st, err := proc.ReadStat(pid)
		if err != nil {
			continue
		}
		stats = append(stats, st)
		if !st.Zombie() {
			live[pid] = st
		}
	}
	return stats, live, nil
}

// descendants says who descends from which registration, as of now:
// members of registered groups, then their descendants other than the
// owner's own children (children mostly have higher pids: a few passes in
// pid order reach a fixed point).
func (sn *scanView) descendants(stats []proc.Stat, live map[int]proc.Stat, me int) map[int]*reg {
	owner := map[int]*reg{}
	for pid, st := range live {
		if r := sn.known[st.PGID]; r != nil {
			owner[pid] = r
		}
	}
	for pass, changed := 0, true; changed && pass < 16; pass++ {
		changed = false
		for _, st := range stats {
			if _, ok := live[st.PID]; !ok || owner[st.PID] != nil || sn.helpers[st.PGID] {
				continue
			}
			if r := owner[st.PPID]; r != nil && st.PPID != me {
				owner[st.PID], changed = r, true
			}
		}
	}
	return owner
}

// reapOrphan reaps a zombie the owner inherited from one of its groups
// (see scan for which).
func (o *Owner) reapOrphan(sn *scanView, st proc.Stat) {
	if st.PPID == o.self.PID && !sn.leaders[st.PID] && (sn.known[st.PGID] != nil || sn.escPids[st.PID]) {
		var ws unix.WaitStatus
		unix.Wait4(st.PID, &ws, unix.WNOHANG, nil)
	}
}

// escapeeOf returns the registration st, a live process, is an escapee
// of; nil when it is in a registered group already, one of the owner's
// or the supervisors' own, or not ours. orphan is true (with nil) when st
// is ours, re-parented to the owner, and no evidence names its spawn.
func (o *Owner) escapeeOf(sn *scanView, st proc.Stat, owner map[int]*reg, mySID int) (r *reg, orphan bool) {
	if sn.known[st.PGID] != nil || st.PGID <= 1 || st.PGID == o.pgid || sn.helpers[st.PGID] || sn.helpers[st.SID] || sn.helpers[st.PID] || sn.leaders[st.PID] {
		return nil, false
	}
	// Only descendants (owner) and processes re-parented to the owner
	// are looked at: anything else on the machine is not ours, and its
	// environment is not read.
	r = owner[st.PID]
	switch {
	case r != nil:
	case st.PPID == o.self.PID:
		var foreign bool
		r, foreign = o.attribute(st, sn)
		// In the owner's session: may be a plain child of the program
		// (a spawn leads a session of its own, unless Foreground).
		orphan = r == nil && !foreign && st.SID != mySID
	case sn.adrift[st.PPID]:
		r = o.orphanOf(st, sn)
	}
	if r == nil && !orphan {
		return nil, false
	}
	// Checked again under mu: a supervisor or a spawn's leader is forked
	// with mu held, and recorded before mu is let go; the snapshot may
	// predate it.
	o.mu.Lock()
	if o.supPids[st.PID] || o.supPids[st.PGID] || o.supPids[st.SID] || o.leaders[st.PID] {
		o.mu.Unlock()
		return nil, false
	}
	if !orphan {
		o.mu.Unlock()
		return r, false
	}
	now := o.snapshotLocked()
	o.mu.Unlock()
	return o.reweigh(st, now)
}

// reweigh attributes st, an orphan by the view sn a scan took before it
// read the process table, by now, a view taken since: a spawn whose
// registration, mark or session came after sn, and whose daemon was
// re-parented to the owner before the read, is named by now and not by
// sn. A spawn is registered and marked before its program runs (its
// gate), so now holds every spawn st can descend from. r is nil and
// orphan false when st's group was registered meanwhile (it is known).
func (o *Owner) reweigh(st proc.Stat, now *scanView) (r *reg, orphan bool) {
	if now.known[st.PGID] != nil {
		return nil, false
	}
	r, foreign := o.attribute(st, now)
	return r, r == nil && !foreign
}

// lineEntry is a process a scan attributed to a registration.
type lineEntry struct {
	start uint64
	r     *reg
}

// tagged returns the registration whose spawn key pid carries with this
// owner's tag, nil when it carries none (or another owner's).
func (o *Owner) tagged(pid int, keys map[string]*reg) *reg {
	env, err := proc.Environ(pid)
	if err != nil {
		return nil
	}
	var owner, key string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, ledger.EnvOwner+"="); ok {
			owner = v
		} else if v, ok := strings.CutPrefix(kv, ledger.EnvSpawn+"="); ok {
			key = v
		}
	}
	if owner != o.self.String() {
		return nil
	}
	return keys[key]
}

// orphanOf names the spawn that st, a process re-parented elsewhere than
// to the owner (no subreaper: to init or to an ancestor of the owner),
// descends from: by what the last scan saw of it (same pid and start
// time), else by this owner's tags or its mark; nil otherwise. Nothing
// weaker is taken: every process of the machine whose parent exited
// lands there.
func (o *Owner) orphanOf(st proc.Stat, sn *scanView) *reg {
	if l, ok := sn.prev[st.PID]; ok && l.start == st.StartTime {
		return l.r
	}
	if r := o.tagged(st.PID, sn.keys); r != nil {
		return r
	}
	return byMark(st.PID, sn.marks)
}

// byMark returns the registration whose mark pid carries, nil for none.
func byMark(pid int, marks map[uint64]*reg) *reg {
	if len(marks) == 0 {
		return nil
	}
	if m, ok := markOfPid(pid); ok {
		return marks[m]
	}
	return nil
}

// attribute names the spawn that st, a process re-parented to the owner
// (its parent exited), descends from, on evidence only (see scan for its
// order); nil when none names one. foreign is true when st carries another
// owner's tags: it is that owner's, never this one's.
func (o *Owner) attribute(st proc.Stat, sn *scanView) (r *reg, foreign bool) {
	if env, err := proc.Environ(st.PID); err == nil {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, ledger.EnvOwner+"="); ok && v != o.self.String() {
				return nil, true // another owner's (in this process): never ours
			}
		}
	}
	if r := o.tagged(st.PID, sn.keys); r != nil {
		return r, false
	}
	if r := byMark(st.PID, sn.marks); r != nil {
		return r, false
	}
	if l, ok := sn.prev[st.PID]; ok && l.start == st.StartTime {
		return l.r, false
	}
	if r := o.byOpenFile(st.PID, sn.spawns); r != nil {
		return r, false
	}
	return sn.sessions[st.SID], false
}

// byOpenFile returns the one spawn whose stdin, stdout or stderr file (its
// log) pid holds open as one of its own, nil when none or several do, or
// when another process's descriptors cannot be read (darwin; the portable
// backend does without, as there).
func (o *Owner) byOpenFile(pid int, spawns []*reg) *reg {
	if o.portable {
		return nil
	}
	var found *reg
	for fd := 0; fd <= 2; fd++ {
		dev, ino, err := proc.DescriptorFile(pid, fd)
		if err != nil {
			continue
		}
		id := fileID{dev: dev, ino: ino}
		for _, r := range spawns {
			if slices.Contains(r.files, id) {
				if found != nil && found != r {
					return nil
				}
				found = r
			}
		}
	}
	return found
}

// fileID names a regular file (a spawn's log) or a pipe (an owned unit's
// output, which hermesd copies into its log).
type fileID struct{ dev, ino uint64 }

// fileIDs names the regular files and pipes among fs.
func fileIDs(fs ...*os.File) []fileID {
	var out []fileID
	for _, f := range fs {
		if f == nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(int(f.Fd()), &st) == nil && (st.Mode&unix.S_IFMT == unix.S_IFREG || st.Mode&unix.S_IFMT == unix.S_IFIFO) {
			out = append(out, fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}) // widths differ by platform
		}
	}
	return out
}

// adoptEscapee registers the process group of the escapee st under r.
func (o *Owner) adoptEscapee(r *reg, st proc.Stat) {
	leader := proc.Identity{PID: st.PGID}
	if id, err := proc.Read(st.PGID); err == nil {
		leader = id // the group's leader is alive: check it before each signal
	}
	e := &reg{id: fmt.Sprintf("%se%d", r.id, st.PGID), key: r.key,
		g: Group{Unit: r.g.Unit, PGID: st.PGID, Leader: leader}, answered: make(chan struct{})}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || o.regs[r.id] != r || o.safeLocked(e.g) != nil {
		return
	}
	// Kept under its spawn whatever the supervisor says: Stop and a clean
	// Close stop it with the spawn.
	r.esc = append(r.esc, e)
	o.escPids[st.PID] = true
	o.sendEscapeeLocked(e, fmt.Sprintf("%s: escapee %d (group %d)", r.g.Unit, st.PID, st.PGID), "left its process group")
}

// sendEscapeeLocked sends e's registration, an escapee's or an orphan's,
// to the supervisor (starting one if none runs) and closes e.answered
// once it is answered, or at once when no answer will come. what names
// e, why says how it was found. What the supervisor does not take (the line cannot be carried, it
// refuses, it cannot start) is reported, never dropped silently: such a
// group would not die with a crash.
func (o *Owner) sendEscapeeLocked(e *reg, what, why string) {
	sent := false
	defer func() {
		if !sent {
			close(e.answered) // no answer will come: nothing waits for one
		}
	}()
	l, err := o.lineLocked(e)
	if err == nil && o.pipe == nil {
		err = o.startLocked() // replays e with the rest
		l = nil
	}
	if err != nil {
		o.warn(fmt.Sprintf("%s is not registered with the supervisor: %v", what, err))
		return
	}
	o.opts.Logf("supervisor: %s %s; registering it", what, why)
	if l != nil {
		sent = true
		o.pipe.Send([][]byte{l}, func(_ int, err error) {
			defer close(e.answered)
			switch {
			case err == nil:
				o.opts.Logf("supervisor: %s registered", what) // acknowledged: it dies with the owner now
			case !errors.As(err, new(*lostError)):
				o.warn(fmt.Sprintf("%s is not registered with the supervisor: %v", what, err))
			}
		})
	}
}

// adoptOrphan registers the process group of st, a process re-parented to
// the owner that no evidence names (see scan), under no spawn: it dies
// with the owner, its registration is dropped once it is empty, and
// Status lists it among the orphans. It returns the registration, nil when
// none was made (the owner is closed, the group is unsafe).
func (o *Owner) adoptOrphan(st proc.Stat) *reg {
	leader := proc.Identity{PID: st.PGID}
	if id, err := proc.Read(st.PGID); err == nil {
		leader = id
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	e := &reg{id: fmt.Sprintf("x%d", o.nextLocked()), g: Group{PGID: st.PGID, Leader: leader},
		leaderGone: true, orphan: true, answered: make(chan struct{})}
	if o.closed || o.safeLocked(e.g) != nil {
		return nil
	}
	o.addRegLocked(e)
	o.escPids[st.PID] = true
	o.sendEscapeeLocked(e, fmt.Sprintf("orphan %d (group %d, session %d)", st.PID, st.PGID, st.SID),
		"was re-parented to the owner and no evidence names its unit (it is no unit's: it dies with the owner)")
	return e
}

// Claim moves the group of pid, held as an orphan (re-parented to the
// owner with no evidence that named a spawn when a scan found it), under
// the spawn of g, now that evidence names g's unit: why says which (its
// pid file names pid). From then on it is one of g's escapees: Members
// lists it, Stop stops it, and Status no longer counts it among the
// orphans. It is done under the scans' lock, so that no scan runs from a
// view in which the group is both. It reports whether pid's group is
// g's now; false when g is not a spawn registered here, pid is not in an
// orphan's group, or pid started before g's leader (it cannot descend
// from it: a stale pid file that names a recycled pid).
func (o *Owner) Claim(g Group, pid int, why string) bool {
	st, err := proc.ReadStat(pid)
	if err != nil || pid <= 1 || st.Zombie() {
		return false
	}
	o.scanMu.Lock()
	defer o.scanMu.Unlock()
	o.mu.Lock()
	defer o.mu.Unlock()
	r := o.findLocked(g)
	if o.closed || r == nil || r.key == "" || r.orphan || st.StartTime < r.g.Leader.StartTime {
		return false
	}
	var e *reg
	for _, x := range o.regs {
		if x.orphan && x.g.PGID == st.PGID {
			e = x
			break
		}
	}
	if e == nil {
		return false
	}
	o.deleteRegLocked(e)
	e.orphan, e.key, e.g.Unit = false, r.key, r.g.Unit
	r.esc = append(r.esc, e)
	for p, l := range o.lineage {
		if l.r == e {
			o.lineage[p] = lineEntry{start: l.start, r: r}
		}
	}
	o.opts.Logf("supervisor: %s: orphan %d (group %d) is the unit's: %s; registered under it", r.g.Unit, pid, st.PGID, why)
	return true
}

// Unclaimed reports whether the owner holds an orphan that may be g's (a
// spawn's): a group whose leader started after g's leader, or whose
// leader is gone (its members' start is not known then). Evidence may yet
// name g for it (Claim).
func (o *Owner) Unclaimed(g Group) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := o.findLocked(g)
	if r == nil || r.key == "" {
		return false
	}
	for _, x := range o.regs {
		if x.orphan && (x.g.Leader.StartTime == 0 || x.g.Leader.StartTime >= r.g.Leader.StartTime) {
			return true
		}
	}
	return false
}
