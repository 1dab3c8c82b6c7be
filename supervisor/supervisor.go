// Package supervisor makes every long-lived child an owner starts die with
// that owner, by any death: clean exit, crash, kill -9, the OOM killer.
//
// An Owner holds the write end of a death pipe; a tiny POSIX sh script (the
// supervisor, supervisor.sh, run by /bin/sh in its own session) holds the
// read end on its stdin. The owner writes one line per registered group.
// When the owner disappears the kernel closes the write end, the supervisor
// reads EOF, sends TERM to every registered group, waits up to the grace for
// them to be empty, sends KILL to what is left and exits.
//
// Groups are process groups, and where a writable cgroup v2 hierarchy exists
// (ModeCgroup) each group also gets its own cgroup under a per-owner subtree,
// so that descendants that leave the process group (setsid, double fork)
// still die. Without cgroups (ModePGroup) the owner is a child subreaper,
// tags every child's environment (ledger.EnvUnit, EnvOwner, EnvSpawn,
// EnvOwnership), finds such escapees (looking at each SIGCHLD, at a
// leader's exit and at Stop) and registers their groups too; the supervisor
// also sweeps for processes tagged with a registered spawn key at EOF.
// Where there is no subreaper (darwin; BackendPortable on Linux) orphans
// go to init: they are found by ancestry, by what an earlier scan saw, or
// by their tags, and the supervisor reads the table with ps and sweeps by
// parent links (see scan, and docs/architecture.md, Platforms).
//
// SpawnOwned is the only way the project starts a long-lived child. There is
// no window in which a child runs its program unregistered: in cgroup mode
// the cgroup is registered before the child is started into it
// (CLONE_INTO_CGROUP); in pgroup mode the child waits on a gate pipe and
// execs its program only after the owner registered its group (at EOF of the
// gate, i.e. if the owner died, it exits instead).
//
// Every line the owner writes is answered by the supervisor (accepted, or
// refused with a reason), and a registration counts only once accepted: a
// refused one fails the spawn (or Own) with the supervisor's reason, before
// the child's program runs. Lines are written by the pipe's own goroutine,
// never under the owner's lock, so a supervisor that does not read (stopped
// by SIGSTOP, a debugger) cannot wedge the owner: a line unanswered for a
// second is noticed, Status says what is wrong, and spawns fail with that
// reason instead of waiting for it.
//
// The owner's cgroup subtree lives as long as the owner: the supervisor
// removes it at the owner's death, not when the owner closes an idle pipe,
// and a spawn re-creates it if it is gone.
//
// An Owner is safe for concurrent use.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/internal/word"
	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/units"
)

// Mode says how groups are contained: units.Mode, whose words the control
// API speaks too.
type Mode = units.Mode

const (
	ModeCgroup = units.ModeCgroup
	ModePGroup = units.ModePGroup
)

// ParseMode parses a mode name; "" is accepted and means automatic.
func ParseMode(s string) (Mode, error) { return units.ParseMode(s) }

// Backend says which of the platform's facilities an Owner uses.
type Backend string

const (
	// BackendNative uses what the platform has. On Linux: the child
	// subreaper, the supervisor script reading /proc, escapees told by the
	// log file they hold open, cgroups where writable. On darwin and
	// FreeBSD it is BackendPortable.
	BackendNative Backend = "native"
	// BackendPortable uses only what darwin has too: pgroup mode (cgroup
	// mode asked fails with ErrNoCgroup), no child subreaper (an escapee is
	// found by its ancestry at each scan, by what an earlier scan saw of
	// it, or by its tags), no open-file attribution, and the supervisor
	// script reads the process table with ps, not /proc. Selectable on
	// Linux so that the behaviour macOS gets is tested there.
	BackendPortable Backend = "portable"
)

// BackendEnv names the environment variable that selects the backend of
// an Owner whose Options.Backend is empty: "native", "portable", or empty
// for native. It is read by New alone, so that every owner of a process
// (hermesd's, hermesctl run's) follows it.
const BackendEnv = "HERMES_SUPERVISOR_BACKEND"

var backendWords = word.Strings("supervisor backend", BackendNative, BackendPortable).Wrap(ErrBackend)

// ParseBackend parses a backend name; "" is accepted and means native.
func ParseBackend(s string) (Backend, error) {
	if s == "" {
		return BackendNative, nil
	}
	return backendWords.Parse(s)
}

// Defaults.
const (
	DefaultGrace     = 3 * time.Second
	DefaultIdleClose = 30 * time.Second
	// stallAfter: a supervisor that leaves a line unanswered this long is
	// not keeping up; if it is stopped (SIGSTOP), registrations fail at
	// once with that reason.
	stallAfter = time.Second
	// stallMax: how long a registration waits for the answer of a
	// supervisor that is not stopped but slow (a loaded machine) before it
	// fails.
	stallMax = 10 * time.Second
	// quickExit: a supervisor that exits by itself sooner than this after
	// its start is broken, not merely killed; it is retried with backoff.
	quickExit  = 5 * time.Second
	maxBackoff = time.Minute
	// poll is how often the janitor looks at groups waiting to become
	// empty (a leader exited, ReleaseOnceEmpty), and only while there are
	// any: the kernel gives no event for an empty process group.
	poll = 250 * time.Millisecond
)

// Errors.
var (
	ErrClosed     = errors.New("owner is closed")
	ErrUnsafe     = errors.New("refused unsafe target group")
	ErrUnknown    = errors.New("group is not registered with this owner")
	ErrLine       = errors.New("protocol line too long")
	ErrSupervisor = errors.New("death supervisor unavailable")
	ErrMode       = units.ErrMode
	ErrBackend    = errors.New("unknown supervisor backend")
	ErrNoCgroup   = errors.New("no writable cgroup v2 hierarchy")
)

// Options configure an Owner.
type Options struct {
	StateDir  string        // where the ledger lives; "" = no ledger
	Role      units.Role    // gateway | worker | run, or "" (recorded in the ledger; units.ParseOwnerRole)
	Grace     time.Duration // TERM→KILL grace at owner death; default 3 s
	Mode      Mode          // "" = cgroup when a writable cgroup v2 hierarchy exists, else pgroup
	Backend   Backend       // "" = $HERMES_SUPERVISOR_BACKEND (BackendEnv), else native
	IdleClose time.Duration // close the pipe after this long with nothing registered; default 30 s
	Logf      func(format string, args ...any)
	// OnRestart is called when the death supervisor exited unasked, with
	// its pid and what follows (a restart, or a retry after backoff). It
	// runs with the Owner's lock held: it must be quick and must not call
	// the Owner. nil: not reported.
	OnRestart func(pid int, why string)
	// OnLedgerWrite receives the duration of each of the Owner's ledger
	// updates (ledger.ObserveWrites); nil: not measured.
	OnLedgerWrite func(time.Duration)
}

// Group names a process group (and its cgroup, where there is one).
type Group struct {
	Unit   string
	PGID   int
	Leader proc.Identity
	Cgroup string // absolute cgroup dir, "" for none
}

// Status is a snapshot of an owner's supervisor.
type Status struct {
	PID    int    // the running supervisor's pid, 0 when none runs
	Groups int    // registered groups
	Mode   Mode   // how groups are contained
	Health string // "ok", "idle" (no supervisor needed), or what is wrong
	// Ledger says why records wait for a ledger that cannot be written (a
	// full disk), and how many; "" while it is written.
	Ledger string
	// Orphans are the process groups, by pgid in order, of processes
	// re-parented to the owner that no evidence names (see scan): they
	// die with the owner, and are no unit's.
	Orphans []int
}

// reg is one registered group. Fields are guarded by Owner.mu.
type reg struct {
	id         string // protocol id: [A-Za-z0-9_]+
	g          Group
	key        string   // spawn key (EnvSpawn value); "" for adopted groups
	spawned    bool     // started by SpawnOwned: its ledger entry goes when it is empty
	leaderGone bool     // the leader exited: release once empty
	onceEmpty  bool     // ReleaseOnceEmpty asked
	stopping   bool     // a StopAll is stopping it and releases it: the janitor leaves it alone
	esc        []*reg   // escapee groups found under this spawn (pgroup mode)
	files      []fileID // the spawn's stdin, stdout, stderr (its log): an orphan holding one is its
	mark       uint64   // the spawn's mark (see markOf), 0 for none
	session    int      // the session the spawn leads (its leader's pid), 0 for none (Foreground)
	// orphan: the group of a process re-parented to the owner that no
	// evidence names (see scan): contained, dropped once empty, no unit's.
	orphan bool
	// waited is closed when the waiter of a spawned leader has reaped it;
	// nil for adopted groups. Close joins the waiters of the groups still
	// registered, the only ones its supervisor kills.
	waited <-chan struct{}
	// answered (an escapee's) is closed once the supervisor answered its
	// registration, or it is known that none will come; Members waits
	// for it, so that what it lists dies with the owner.
	answered chan struct{}
}

// Owner owns the groups it spawns or adopts: they die with it.
type Owner struct {
	ownerConfig // set by newOwner; read without mu

	mu         sync.Mutex
	ownerState // guarded by mu
	scanState  // what the scans keep; see its fields for their guards

	// warning is what went wrong with a registration nobody waits for (an
	// escapee's, a replay's): Status reports it while the supervisor is
	// otherwise fine. Set from the pipe's goroutines, hence atomic.
	warning atomic.Pointer[string]

	wake chan struct{} // buffered(1): janitor should look now
	// sigchld receives SIGCHLD once the owner is a child subreaper
	// (pgroup mode, first spawn): a child exited or an orphan was
	// re-parented to the owner, so the janitor scans for escapees and
	// reaps the zombies it may reap.
	sigchld chan os.Signal
	stop    chan struct{}
	done    chan struct{} // closed when the janitor returned
	hooks   *ownerHooks   // nil but in tests
}

// ownerConfig is what newOwner sets before the janitor starts, and
// nothing changes after: it is read without mu.
type ownerConfig struct {
	opts   Options
	mode   Mode
	self   proc.Identity
	pgid   int
	name   string // owner's name in keys and cgroup dirs: PID_STARTTIME
	led    *ledger.Ledger
	jr     *journal    // nil without a ledger; every ledger change goes through it
	tree   *cgroupTree // nil in pgroup mode
	launch launcher
	ctx    context.Context // lives until Close; used by the janitor's ledger writes
	cancel context.CancelFunc
	// portable: the portable backend's behaviour (asked, or the only one
	// the platform has): no subreaper, ps in the script, no open-file
	// attribution.
	portable bool
}

// ownerState is what an Owner's registrations and supervisor are now:
// every field is guarded by Owner.mu.
type ownerState struct {
	regs map[string]*reg // by id; changed only by addRegLocked and deleteRegLocked
	// pending are the regs the janitor looks at (tidy): their leader is
	// gone or they are to be released once empty, and no StopAll holds
	// them (stopping). keyed counts the regs with a spawn key. Both are
	// kept with regs (addRegLocked, deleteRegLocked, pendLocked,
	// holdLocked), so that a janitor's pass costs what waits for it, not
	// every group the owner holds: a stop of thousands of units wakes it
	// at each leader's exit.
	pending map[*reg]bool
	keyed   int
	// byGroup are the regs by their group (process group, leader pid and
	// start: groupKeyOf), as findLocked finds them; kept with regs (and
	// with a spawn's group once it is known: setGroupLocked), so that a
	// lookup, made at each unit's stop, signal and exit, does not walk
	// every registration.
	byGroup   map[groupKey][]*reg
	pipe      deathPipe    // nil when no supervisor runs
	retired   []deathPipe  // closed pipes whose supervisor may still run
	started   time.Time    // when pipe started
	idleSince time.Time    // when regs last became empty
	failures  int          // consecutive quick exits
	retryAt   time.Time    // next automatic restart, zero for none
	health    string       // "" = ok
	seq       uint64       // the last number given (nextLocked)
	closed    bool         // Close was called
	leaders   map[int]bool // pids of our exec.Cmd children (never reaped by the scan)
	supPids   map[int]bool // the supervisors started (the latest 64 at least)
	// stopAlls counts the StopAlls that run; while one does, the
	// janitor's scan for a SIGCHLD is owed (scanOwed) rather than run
	// (see scanAskedLocked).
	stopAlls int
	scanOwed bool
}

// ownerHooks let a test order an Owner's steps and count its janitor's
// wake-ups: given to newOwner, never changed after; nil in production.
type ownerHooks struct {
	afterSpawn  func(pid int) // between a child's start and its registration
	launched    func(pid int) // a supervisor started, its replay sent; called with mu held
	tidyScanned func()        // in tidy, between the scan and the look at the groups to drop
	tidyLooked  func(n int)   // in tidy: the registrations its pass looked at
	scanViewed  func()        // in a scan, between its view of the registrations and its read of the process table
	signalled   func(pid int) // a process of a cgroup, or a process group (by its id), is about to get a signal (signalLeader, signalRest, signalAlone)
	emptyPoll   time.Duration // replaces waitEmpty's emptyPollEvery: what does not depend on polling
	gather      time.Duration // replaces the last scan's length as lateScans' bound on gather
	passes      atomic.Int64  // janitor wake-ups: an idle owner has none
	narrowScans atomic.Int64  // scans that read only what descends from the owner (ownedTable)
}

// New makes an owner. It starts nothing: the supervisor starts lazily at the
// first registration. In ModeCgroup (asked, or found) it creates the owner's
// cgroup subtree, moving the calling process into a leaf first when its
// cgroup is not the hierarchy's root, and removes the empty cgroups that
// owners that are gone left behind. Call Close at a clean exit.
func New(opts Options) (*Owner, error) {
	return newOwner(opts, launchShell, nil)
}

func newOwner(opts Options, launch launcher, hooks *ownerHooks) (*Owner, error) {
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.IdleClose <= 0 {
		opts.IdleClose = DefaultIdleClose
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.OnRestart == nil {
		opts.OnRestart = func(int, string) {}
	}
	if _, err := ParseMode(string(opts.Mode)); err != nil {
		return nil, err
	}
	if _, err := units.ParseOwnerRole(string(opts.Role)); err != nil {
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	if opts.Backend == "" {
		opts.Backend = Backend(os.Getenv(BackendEnv))
	}
	backend, err := ParseBackend(string(opts.Backend))
	if err != nil {
		return nil, fmt.Errorf("supervisor: %w (%s)", err, BackendEnv)
	}
	opts.Backend = backend
	self, err := proc.Self()
	if err != nil {
		return nil, fmt.Errorf("supervisor: own identity: %w", err)
	}
	o := &Owner{
		ownerConfig: ownerConfig{opts: opts, self: self, pgid: syscall.Getpgrp(), name: fmt.Sprintf("%d_%d", self.PID, self.StartTime)},
		ownerState:  ownerState{regs: map[string]*reg{}, pending: map[*reg]bool{}, byGroup: map[groupKey][]*reg{}, leaders: map[int]bool{}, supPids: map[int]bool{}},
		scanState:   scanState{escPids: map[int]bool{}},
		wake:        make(chan struct{}, 1), sigchld: make(chan os.Signal, 1),
		stop: make(chan struct{}), done: make(chan struct{}), hooks: hooks,
	}
	o.portable = backend == BackendPortable || runtime.GOOS != "linux"
	// Every supervisor is remembered (called with mu held, by startLocked):
	// its helpers (sleep, grep) run in its session, and when it is killed
	// they are re-parented to the owner; they are never escapees.
	o.launch = func(grace time.Duration, pgid int, base, own, table string, replay [][]byte, reply func(int, error)) (deathPipe, error) {
		p, err := launch(grace, pgid, base, own, table, replay, reply)
		if err == nil {
			if len(o.supPids) >= 64 {
				clear(o.supPids)
			}
			o.supPids[p.PID()] = true
		}
		return p, err
	}
	if opts.StateDir != "" {
		if o.led, err = ledger.Open(opts.StateDir); err != nil {
			return nil, fmt.Errorf("supervisor: %w", err)
		}
		if opts.OnLedgerWrite != nil {
			o.led.ObserveWrites(opts.OnLedgerWrite)
		}
	}
	o.mode = opts.Mode
	if backend == BackendPortable {
		if o.mode == ModeCgroup {
			return nil, fmt.Errorf("supervisor: cgroup mode asked with the %s backend: %w", backend, ErrNoCgroup)
		}
		o.mode = ModePGroup
	}
	if o.mode != ModePGroup {
		tree, err := openCgroupTree("hermes-" + o.name)
		switch {
		case err == nil:
			o.tree, o.mode = tree, ModeCgroup
			tree.sweep(opts.Logf)
		case o.mode == ModeCgroup:
			return nil, fmt.Errorf("supervisor: cgroup mode asked: %w: %v", ErrNoCgroup, err)
		default:
			opts.Logf("supervisor: pgroup mode: %v", err)
			o.mode = ModePGroup
		}
	}
	// The owner's lifetime context: library code has no caller context
	// here, and the janitor's ledger writes must stop at Close.
	o.ctx, o.cancel = context.WithCancel(context.Background())
	if o.led != nil {
		o.jr = newJournal(o.ctx, o.led, opts.Logf)
	}
	o.idleSince = time.Now()
	go o.run()
	return o, nil
}

// Mode reports how groups are contained.
func (o *Owner) Mode() Mode { return o.mode }

// Backend reports the backend asked (Options.Backend, or BackendEnv).
func (o *Owner) Backend() Backend { return o.opts.Backend }

// Status reports the supervisor's state.
// Health is "ok" or "idle" when all is well; else it says what is wrong:
// "failing: …" (the supervisor exits at once, retried with backoff),
// "stopped: …" (it is stopped and reads nothing), "not responding: …" (a
// line unanswered for more than a second), "degraded: …" (a registration
// nobody waited for was refused).
func (o *Owner) Status() Status {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := Status{Groups: len(o.regs), Mode: o.mode, Health: o.health}
	for _, r := range o.regs {
		if r.orphan {
			s.Orphans = append(s.Orphans, r.g.PGID)
		}
	}
	slices.Sort(s.Orphans)
	if o.pipe != nil {
		s.PID = o.pipe.PID()
	}
	if s.Health == "" && o.pipe != nil {
		s.Health, _ = stallOf(o.pipe)
	}
	if w := o.warning.Load(); s.Health == "" && w != nil {
		s.Health = "degraded: " + *w
	}
	if o.jr != nil {
		if n, err := o.jr.backlog(); err != nil {
			s.Ledger = fmt.Sprintf("%d ledger records wait in memory, not yet on disk (%v); free space or fix the state directory: they are written once it can be", n, err)
		}
	}
	if s.Health == "" {
		s.Health = "ok"
		if o.pipe == nil {
			s.Health = "idle"
		}
	}
	return s
}

// stallOf says what is wrong when the supervisor of p does not keep up,
// "" when it does: stopped is true when the kernel says it is stopped (a
// SIGSTOP, a job-control stop), whether or not a line waits yet.
func stallOf(p deathPipe) (reason string, stopped bool) {
	pid := p.PID()
	if st, err := proc.ReadStat(pid); err == nil && st.State == 'T' {
		stopped = true
	}
	var late time.Duration
	if at := p.Waiting(); !at.IsZero() {
		late = time.Since(at)
	}
	switch {
	case stopped && late >= stallAfter:
		return fmt.Sprintf("stopped: supervisor %d is stopped and has not read its pipe for %v; registrations fail until it runs again (kill -CONT %d)", pid, late.Round(100*time.Millisecond), pid), true
	case stopped:
		return fmt.Sprintf("stopped: supervisor %d is stopped; registrations fail until it runs again (kill -CONT %d)", pid, pid), true
	case late >= stallAfter:
		return fmt.Sprintf("not responding: supervisor %d has not answered for %v", pid, late.Round(100*time.Millisecond)), false
	}
	return "", false
}

// availableLocked fails with the reason when the running supervisor cannot
// take a registration now: it is stopped, or it left a line unanswered for
// stallMax. A supervisor that is merely slow is waited for (see await).
func (o *Owner) availableLocked() error {
	if o.pipe == nil {
		return nil
	}
	reason, stopped := stallOf(o.pipe)
	if stopped || reason != "" && time.Since(o.pipe.Waiting()) >= stallMax {
		return fmt.Errorf("%w: %s", ErrSupervisor, reason)
	}
	return nil
}

// Close is the clean owner exit: it closes the death pipe, so the
// supervisor kills every group still registered (TERM, grace, KILL) and
// exits, and meanwhile stops the janitor and writes the ledger records
// still queued (see SpawnOwned): the three go at once, and none waits for
// another. Close waits for all of them (the supervisor at most the grace
// plus 5 s), and for the waiters of the spawned children whose groups
// were still registered.
// Released and Survive groups live on, and Close does not wait for their
// leaders: a clean stop whose owned groups are already gone returns as soon
// as the supervisor has read EOF and exited. Close is idempotent; every
// other method fails with ErrClosed afterwards.
func (o *Owner) Close() error {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil
	}
	o.closed = true
	var waiters []<-chan struct{}
	var regs []*reg
	for _, r := range o.regs {
		regs = append(regs, r)
		if r.waited != nil {
			waiters = append(waiters, r.waited)
		}
	}
	active := o.pipe
	pipes := append(o.retired, active)
	o.pipe, o.retired = nil, nil
	o.mu.Unlock()
	if o.tree != nil {
		// The subtree, before the pipes close: at a clean exit it is empty
		// (every group ended and its cgroup was removed), and the
		// supervisor, finding it gone at EOF, runs no rmdir of its own (a
		// fork and an exec that Close waits for). With a cgroup left in
		// it, the removal fails, and the supervisor removes it once it has
		// killed what is there.
		syscall.Rmdir(o.tree.root)
	}
	// The pipes first: the supervisor's EOF work (a look at what is still
	// registered, and the removal of the cgroups) runs beside the rest.
	// Nothing sends to them any more (o.pipe is nil), and a supervisor
	// that exits now is not restarted (o.closed). The running one is told
	// first that the owner closes (C): with nothing registered, it exits
	// on reading that line, without the work EOF does.
	for _, p := range pipes {
		if p == nil {
			continue
		}
		if p == active {
			p.Send([][]byte{closeLine}, nil)
		}
		p.Close()
	}
	close(o.stop)
	<-o.done
	signal.Stop(o.sigchld)
	if o.jr != nil {
		o.jr.close() // the records of owned spawns that trail are written now
	}
	o.cancel()
	limit := o.opts.Grace + 5*time.Second
	bound, stop := context.WithTimeout(context.WithoutCancel(o.ctx), limit)
	defer stop()
	var err error
	for _, p := range pipes {
		if p == nil {
			continue
		}
		select {
		case <-p.Exited():
		case <-bound.Done():
			// Stopped, or stuck: finish below kills what it was given,
			// and the supervisor itself must not wake up later.
			reason, _ := stallOf(p)
			err = errors.Join(err, fmt.Errorf("supervisor %d did not exit within %v of close (%s); the owner stops its groups itself", p.PID(), limit, reason))
			if k, ok := p.(interface{ kill() }); ok {
				k.kill()
			}
		}
	}
	o.finish(regs)
wait:
	for _, w := range waiters {
		select {
		case <-w:
		case <-bound.Done():
			break wait
		}
	}
	if o.tree != nil {
		os.Remove(o.tree.root) // the supervisor removed it already unless a survivor lives in it
	}
	return err
}

// finish is Close's fallback for a supervisor that did not finish its kill
// sequence (killed during the grace): the groups of regs that still have
// members get TERM, the grace, then KILL, from the owner itself. After a
// supervisor that finished, every group is empty and finish does nothing.
func (o *Owner) finish(regs []*reg) {
	var left []*reg
	for _, r := range regs {
		if !o.regEmpty(r) {
			left = append(left, r)
		}
	}
	if len(left) == 0 {
		return
	}
	o.opts.Logf("supervisor: %d groups still alive after the supervisor exited; stopping them", len(left))
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		for _, r := range left {
			o.signal(r, sig)
		}
		deadline := time.Now().Add(o.opts.Grace)
		for _, r := range left {
			o.waitEmpty(context.WithoutCancel(o.ctx), r, max(time.Until(deadline), 0))
		}
	}
	// The supervisor did not get to remove their cgroups.
	for _, r := range left {
		if o.tree.leaf(r.g.Cgroup) {
			removeWhenEmpty(r.g.Cgroup, o.opts.Grace)
		}
	}
}

// poke asks the janitor to look now.
func (o *Owner) poke() { nudge(o.wake) }

// nudge wakes the reader of ch, a channel of capacity one that it drains
// before it looks, unless a wake-up is already pending: never blocks.
func nudge(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// run is the janitor: it releases groups that became empty, closes an idle
// pipe, restarts a supervisor that died, and (pgroup mode) finds escapees.
// Started by newOwner, stopped and joined by Close.
//
// It is event-driven: it wakes when the supervisor exits, when poked (a
// leader exited, a group was released or asked to be released once empty,
// the registrations changed), on SIGCHLD (pgroup mode), and on a one-shot
// timer armed only for the next duty that is due at a known time (see
// dueLocked). An idle owner (nothing pending, nothing due) arms no timer,
// so it costs no wake-up at all.
func (o *Owner) run() {
	defer close(o.done)
	t := time.NewTimer(time.Hour)
	t.Stop()
	var last time.Time // last look at the pending groups
	var rest time.Time // no timed scan before it (see nextScan)
	for {
		o.mu.Lock()
		p := o.pipe
		due := o.dueLocked(last, rest)
		o.mu.Unlock()
		var exited <-chan struct{}
		if p != nil {
			exited = p.Exited()
		}
		var fire <-chan time.Time
		if !due.IsZero() {
			t.Reset(max(time.Until(due), 0))
			fire = t.C
		}
		sigchld := false
		select {
		case <-o.stop:
			t.Stop()
			return
		case <-exited:
			o.supervisorExited(p)
		case <-o.wake:
		case <-o.sigchld:
			sigchld = true
		case <-fire:
		}
		t.Stop()
		if o.hooks != nil {
			o.hooks.passes.Add(1)
		}
		last = time.Now()
		o.mu.Lock()
		scan := o.scanAskedLocked(sigchld, last, rest)
		o.mu.Unlock()
		o.tidy(scan)
		if scan != noScan {
			rest = scanRested(last, time.Now())
		}
		o.timers()
	}
}

// scanKind is what a janitor's pass scans: nothing, what a SIGCHLD may
// have changed (the owner's orphans, and the groups waiting to be
// dropped: a scan narrowed to them where it can be, see narrowLocked), or
// the whole process table (a timed scan).
type scanKind int

const (
	noScan scanKind = iota
	childScan
	tableScan
)

// scanAskedLocked reports what the janitor's pass at now scans: the
// whole table when a timed scan is due (nextScan after rest); for a
// SIGCHLD (sigchld), or for one whose scan a StopAll owed it, what the
// SIGCHLD may have changed (childScan). A SIGCHLD while a StopAll runs
// is owed, not scanned: the batch's leaders exiting send one each, and a
// scan for each (a read of the whole process table) came between the
// batch's own scans (lateScans), which find the escapees of its groups
// and reap the orphans a scan may reap, and delayed them. The StopAll's
// end wakes the janitor for the scan it owes (release), so that every
// SIGCHLD is still followed by a scan that began after it.
func (o *Owner) scanAskedLocked(sigchld bool, now, rest time.Time) scanKind {
	if o.scanDueLocked() && !now.Before(nextScan(o.scanned, rest)) {
		o.scanOwed = false
		return tableScan
	}
	if o.stopAlls > 0 {
		o.scanOwed = o.scanOwed || sigchld
		return noScan
	}
	owed := o.scanOwed
	o.scanOwed = false
	if sigchld || owed {
		return childScan
	}
	return noScan
}

// dueLocked returns when the janitor must look next without an event: the
// next poll of the groups waiting to become empty (last is when it looked
// at them), a supervisor restart after backoff, clearing the failure count
// of a supervisor that lived past quickExit, the idle close, the next
// timed scan (not before rest, see nextScan). It returns the zero time
// when nothing is due: the janitor then arms no timer.
func (o *Owner) dueLocked(last, rest time.Time) time.Time {
	var due time.Time
	at := func(t time.Time) {
		if due.IsZero() || t.Before(due) {
			due = t
		}
	}
	if o.closed {
		return due
	}
	if len(o.pending) > 0 {
		at(last.Add(poll))
	}
	switch {
	case o.pipe == nil && !o.retryAt.IsZero():
		at(o.retryAt)
	case o.pipe != nil && o.failures > 0:
		at(o.started.Add(quickExit))
	}
	if o.pipe != nil && len(o.regs) == 0 {
		at(o.idleSince.Add(o.opts.IdleClose))
	}
	if o.scanDueLocked() {
		at(nextScan(o.scanned, rest))
	}
	return due
}

// scanRest is how many times a look that scanned took the janitor rests
// from timed scans after it. A scan reads the whole process table, so its
// cost grows with the processes on the machine (thousands of units, and
// whatever else runs): with a scan every escapeeScan however long one
// took, scans ran back to back while thousands of units started on a
// loaded machine, and took a core from the spawns. Resting after each
// keeps timed scans to at most a tenth of the janitor's time, so the
// cost of a start stays proportional to its units; a scan asked for by
// an event (a child's exit, a group to drop) is not delayed. The rest is
// at most maxScanRest, so that an escapee is still found within seconds
// when a scan takes long because the machine is loaded.
const (
	scanRest    = 9
	maxScanRest = 4 * escapeeScan
)

// scanRested is when the rest after a look that began at began and ended
// at ended ends.
func scanRested(began, ended time.Time) time.Time {
	return ended.Add(min(scanRest*ended.Sub(began), maxScanRest))
}

// nextScan is when the next timed scan is due: escapeeScan after the last
// scan began (scanned), and not before rest.
func nextScan(scanned, rest time.Time) time.Time {
	if due := scanned.Add(escapeeScan); due.After(rest) {
		return due
	}
	return rest
}

// escapeeScan is how often, in pgroup mode, the janitor looks for escapees
// while spawns are registered. A process re-parented to the owner when its
// parent, a grandchild, exits (a double fork under a live unit) sends the
// owner no signal: only a look finds it, and it dies with the owner only
// once found.
const escapeeScan = time.Second

// scanDueLocked reports whether escapees are looked for on a timer: pgroup
// mode, with a spawn registered.
func (o *Owner) scanDueLocked() bool {
	return o.mode == ModePGroup && o.keyed > 0
}

// supervisorExited handles the exit of p, the supervisor that ran.
func (o *Owner) supervisorExited(p deathPipe) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || o.pipe != p {
		return
	}
	o.pipe = nil
	p.Close()
	o.warning.Store(nil)
	now := time.Now()
	lived := now.Sub(o.started)
	// A supervisor killed by a signal (pkill, the OOM killer) is not a
	// broken install: it is restarted at once, or the registered groups
	// would be unprotected for the whole backoff.
	k, ok := p.(interface{ killed() bool })
	if lived < quickExit && !(ok && k.killed()) {
		o.failures++
		backoff := min(time.Second<<min(o.failures-1, 6), maxBackoff)
		o.retryAt = now.Add(backoff)
		o.health = fmt.Sprintf("failing: supervisor %d exited %v after its start (%d in a row); next try in %v", p.PID(), lived.Round(time.Millisecond), o.failures, backoff)
		o.opts.Logf("supervisor: %s", o.health)
		o.opts.OnRestart(p.PID(), o.health)
		return
	}
	o.opts.Logf("supervisor: supervisor %d exited after %v; restarting and replaying %d groups", p.PID(), lived.Round(time.Second), len(o.regs))
	o.opts.OnRestart(p.PID(), fmt.Sprintf("exited after %v; restarted, %d groups replayed", lived.Round(time.Second), len(o.regs)))
	o.retryAt = time.Time{}
	if len(o.regs) > 0 {
		if err := o.startLocked(); err != nil {
			o.opts.Logf("supervisor: restart: %v", err)
		}
	}
}

// timers runs the time-driven duties: a pending restart, the idle close,
// and clearing a failure once a supervisor has lived long enough.
func (o *Owner) timers() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	now := time.Now()
	if o.pipe == nil && !o.retryAt.IsZero() && !now.Before(o.retryAt) {
		o.retryAt = time.Time{}
		if len(o.regs) > 0 {
			if err := o.startLocked(); err != nil {
				o.opts.Logf("supervisor: restart: %v", err)
			}
		}
	}
	if o.pipe != nil && o.failures > 0 && now.Sub(o.started) >= quickExit {
		o.failures, o.health = 0, ""
	}
	if o.pipe != nil && len(o.regs) == 0 && now.Sub(o.idleSince) >= o.opts.IdleClose {
		o.opts.Logf("supervisor: nothing registered for %v: closing the death pipe", o.opts.IdleClose)
		o.pipe.Send([][]byte{idleLine}, nil) // the subtree stays: it lives as long as the owner
		o.pipe.Close()
		o.retired = append(o.retired, o.pipe)
		o.pipe = nil
	}
	o.pruneRetiredLocked()
}

func (o *Owner) pruneRetiredLocked() {
	kept := o.retired[:0]
	for _, p := range o.retired {
		select {
		case <-p.Exited():
		default:
			kept = append(kept, p)
		}
	}
	o.retired = kept
}

// startLocked launches a supervisor and replays every registration. The
// answers to the replay are not waited for: a refusal is logged and shown
// by Status.
func (o *Owner) startLocked() error {
	cgBase, cgOwn := "", ""
	if o.tree != nil {
		cgBase, cgOwn = o.tree.base, o.tree.root
		// The subtree lives as long as the owner: made again if something
		// removed it while no supervisor ran (a spawn does the same).
		if err := os.Mkdir(cgOwn, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			o.opts.Logf("supervisor: owner cgroup %s: %v", cgOwn, err)
		}
	}
	table := "proc"
	if o.portable {
		table = "ps" // as on darwin, which has no /proc
	}
	var lines [][]byte
	var names []string
	for _, r := range o.regs {
		for _, x := range append([]*reg{r}, r.esc...) {
			l, err := o.lineLocked(x)
			if err != nil {
				continue // refused at registration already
			}
			lines = append(lines, l)
			names = append(names, fmt.Sprintf("group %d of %s", x.g.PGID, x.g.Unit))
		}
	}
	// The replay goes with the launch: it is in the death pipe before the
	// supervisor exists, so that the owner's death at any moment after
	// finds it there.
	p, err := o.launch(o.opts.Grace, o.pgid, cgBase, cgOwn, table, lines, func(i int, err error) {
		if err != nil && !errors.As(err, new(*lostError)) {
			o.warn(fmt.Sprintf("replay of %s: %v", names[i], err))
		}
	})
	if err != nil {
		o.health = fmt.Sprintf("failing: %v", err)
		return fmt.Errorf("%w: %v", ErrSupervisor, err)
	}
	o.pipe, o.started = p, time.Now()
	o.poke()
	if o.hooks != nil && o.hooks.launched != nil {
		o.hooks.launched(p.PID())
	}
	return nil
}

// warn records and logs what went wrong with a registration that nobody
// waits for. Called from the pipe's goroutines: it takes no lock of o.
func (o *Owner) warn(msg string) {
	o.warning.Store(&msg)
	o.opts.Logf("supervisor: %s", msg)
}

// lineLocked is r's registration line, for the running hierarchy.
func (o *Owner) lineLocked(r *reg) ([]byte, error) {
	base := ""
	if o.tree != nil {
		base = o.tree.base
	}
	return regLine(r.id, base, r)
}

// sent is a registration sent to a supervisor: its answer comes on ack.
type sent struct {
	ack <-chan error
	p   deathPipe
}

// registerLocked records r and sends its registration to the supervisor,
// starting one first if none runs (lazy start; the start replays the other
// registrations). It does not wait: the answer is to be waited for with
// confirm once mu is released. It fails at once, registering nothing, when
// the line cannot be carried or the supervisor cannot take it now
// (stopped).
func (o *Owner) registerLocked(r *reg) (sent, error) {
	l, err := o.lineLocked(r)
	if err != nil {
		return sent{}, err
	}
	if err := o.availableLocked(); err != nil {
		return sent{}, err
	}
	if o.pipe == nil {
		if err := o.startLocked(); err != nil {
			return sent{}, err
		}
	}
	o.addRegLocked(r)
	ack := make(chan error, 1)
	o.pipe.Send([][]byte{l}, func(_ int, err error) { ack <- err })
	return sent{ack, o.pipe}, nil
}

// confirm waits for the supervisor's answer to r's registration (s, from
// registerLocked). An answer lost with its supervisor (killed meanwhile,
// whose exit the janitor may not have seen yet) is asked of a new one,
// which is given every registration: up to three supervisors. It returns
// nil once accepted, a *RefusedError, or the reason the supervisor does not
// answer (see await). The caller unregisters r on failure.
func (o *Owner) confirm(ctx context.Context, r *reg, s sent) error {
	for try := 1; ; try++ {
		err := o.await(ctx, s.ack, 1)
		if err == nil || try == 3 || !errors.As(err, new(*lostError)) {
			return err
		}
		o.mu.Lock()
		switch {
		case o.closed:
			err = ErrClosed
		case o.regs[r.id] != r:
			err = fmt.Errorf("group %d of %s: unregistered while it waited for the supervisor: %w", r.g.PGID, r.g.Unit, ErrUnknown)
		default:
			if o.pipe == s.p {
				// Its answers are lost: it exited (or its pipe broke),
				// and nothing it was given is protected by it any more.
				o.pipe.Close()
				o.retired = append(o.retired, o.pipe)
				o.pipe = nil
			}
			s, err = o.registerLocked(r)
		}
		o.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// await waits for n answers on ack and returns the first error among them.
// A supervisor that answers nothing for stallAfter is looked at: if it is
// stopped, await fails at once with that reason; if it runs but is slow,
// await goes on waiting, up to stallMax. ctx bounds the wait too.
func (o *Owner) await(ctx context.Context, ack <-chan error, n int) error {
	start := time.Now()
	t := time.NewTimer(stallAfter)
	defer t.Stop()
	var first error
	for n > 0 {
		select {
		case err := <-ack:
			n--
			if first == nil {
				first = err
			}
			continue
		case <-ctx.Done():
			return fmt.Errorf("waiting for the supervisor's answer: %w", ctx.Err())
		case <-t.C:
		}
		o.mu.Lock()
		p := o.pipe
		o.mu.Unlock()
		if p != nil {
			if reason, stopped := stallOf(p); reason != "" && (stopped || time.Since(start) >= stallMax) {
				o.opts.Logf("supervisor: %s", reason)
				return fmt.Errorf("%w: %s", ErrSupervisor, reason)
			}
		}
		t.Reset(stallAfter)
	}
	return first
}

// unregisterLocked forgets r and its escapees and tells the supervisor. It
// does not wait; the answers come on the returned channel (nil when nothing
// was sent), n of them, for a caller that must know (Release).
func (o *Owner) unregisterLocked(r *reg) (ack <-chan error, n int) {
	return o.unregisterAllLocked([]*reg{r})
}

// unregisterAllLocked is unregisterLocked of every reg of regs (those not
// registered are skipped), with one Send. When none is left registered,
// the one line "U *" unregisters everything the supervisor holds, in place
// of a line per group: a clean stop's last batch drops every group, and
// the supervisor reads its lines a byte per read(2) (a hundred U lines
// kept it busy for milliseconds after the groups were gone). The
// supervisor holds exactly what is in regs then: every registration and
// unregistration is sent under mu, and the pipe keeps their order.
func (o *Owner) unregisterAllLocked(regs []*reg) (ack <-chan error, n int) {
	var ids []string
	for _, r := range regs {
		if o.regs[r.id] != r {
			continue
		}
		o.deleteRegLocked(r)
		ids = append(ids, r.id)
		for _, e := range r.esc {
			delete(o.escPids, e.g.Leader.PID)
			ids = append(ids, e.id)
		}
	}
	if len(ids) == 0 {
		return nil, 0
	}
	if len(o.regs) == 0 {
		o.idleSince = time.Now()
		o.poke() // the idle close is due now: the janitor arms its timer
	}
	if o.pipe == nil {
		return nil, 0 // nothing to tell; a later start replays only what is left
	}
	lines := [][]byte{unregAllLine}
	if len(o.regs) > 0 {
		lines = lines[:0]
		for _, id := range ids {
			lines = append(lines, unregLine(id))
		}
	}
	c := make(chan error, len(lines))
	o.pipe.Send(lines, func(_ int, err error) { c <- err })
	return c, len(lines)
}

func (o *Owner) nextLocked() uint64 { o.seq++; return o.seq }

// addRegLocked adds r to the registrations, and to the janitor's pending
// ones when its leader is gone or it is to be released once empty and no
// StopAll holds it.
func (o *Owner) addRegLocked(r *reg) {
	o.regs[r.id] = r
	o.indexRegLocked(r)
	if r.key != "" {
		o.keyed++
	}
	o.holdLocked(r, r.stopping)
}

// deleteRegLocked takes r out of the registrations (it must be there).
func (o *Owner) deleteRegLocked(r *reg) {
	delete(o.regs, r.id)
	o.unindexLocked(r)
	delete(o.pending, r)
	if r.key != "" {
		o.keyed--
	}
}

// indexRegLocked puts r in byGroup, under its group as it is now.
func (o *Owner) indexRegLocked(r *reg) {
	k := groupKeyOf(r.g)
	o.byGroup[k] = append(o.byGroup[k], r)
}

// unindexLocked takes r out of byGroup.
func (o *Owner) unindexLocked(r *reg) {
	k := groupKeyOf(r.g)
	if rs := slices.DeleteFunc(o.byGroup[k], func(x *reg) bool { return x == r }); len(rs) > 0 {
		o.byGroup[k] = rs
	} else {
		delete(o.byGroup, k)
	}
}

// setGroupLocked sets the process group and leader of r, a spawn's
// registration, once its leader is started.
func (o *Owner) setGroupLocked(r *reg, pgid int, leader proc.Identity) {
	registered := o.regs[r.id] == r
	if registered {
		o.unindexLocked(r)
	}
	r.g.PGID, r.g.Leader = pgid, leader
	if registered {
		o.indexRegLocked(r)
	}
}

// pendLocked sets r's leaderGone (gone) or onceEmpty, and has the janitor
// look at it while it is registered.
func (o *Owner) pendLocked(r *reg, gone bool) {
	if gone {
		r.leaderGone = true
	} else {
		r.onceEmpty = true
	}
	o.holdLocked(r, r.stopping)
}

// holdLocked sets r's stopping: a StopAll holds it (stopping) or lets it
// go. A registered group the janitor is to look at is pending while no
// StopAll holds it.
func (o *Owner) holdLocked(r *reg, stopping bool) {
	r.stopping = stopping
	if o.regs[r.id] == r && (r.leaderGone || r.onceEmpty) && !stopping {
		o.pending[r] = true
	} else {
		delete(o.pending, r)
	}
}
