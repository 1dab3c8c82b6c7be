// Package reconciler keeps the declared units running: it compares the
// desired state (the loaded unit files) with the actual state (the groups it
// spawned, re-adopted or adopted) and acts on the difference.
//
// It is level-based, in the manner of controller-runtime: every event (a file
// change, a process exit, a timer, a readiness result, a notify message, a
// control command) is handled by one goroutine, Run's, which owns all state;
// after each event a reconcile pass walks every unit in dependency order and
// starts, stops or leaves it. Nothing outside Run touches a unit: control
// calls post a request and wait for the reply.
//
// A unit stopped with `hermesctl stop` stays stopped until `hermesctl
// start`: reloads and edits of its file switch it to the new version (the
// start then runs that one) but do not start it, nor does a restart of
// hermesd in the same boot (Options.Holds). A unit whose file is removed
// and added again is a new unit, and starts. A unit disabled with
// `hermesctl disable` stays stopped until `hermesctl enable`, across
// reboots too (holds.go).
//
// Timing (backoff, start limits, start timeout, watchdog, runtime max) uses
// the time package's timers, so tests run it under testing/synctest; the
// arithmetic is in pure functions (Backoff, StartLimitHit, Stable).
package reconciler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/events"
	"github.com/hermes-units/hermes/internal/holds"
	"github.com/hermes-units/hermes/internal/logfile"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
)

// ParseRole parses the role a Reconciler runs in, a daemon's (SPEC §3):
// "gateway" (adoptable and persist_on_release units outlive it, and it
// re-adopts them) or "worker" (it owns its background jobs: adoptable
// units die with it). An unknown role wraps ErrBadRole.
func ParseRole(s string) (units.Role, error) {
	r, err := units.ParseRole(s)
	if err != nil {
		return "", fmt.Errorf("role %q: %w (want gateway or worker)", s, ErrBadRole)
	}
	return r, nil
}

// Errors the reconciler returns.
var (
	ErrBadRole = errors.New("unknown role")
	// ErrStopped reports a call made after Run returned.
	ErrStopped = errors.New("reconciler is not running")
)

// Loaded is the result of reading the units directory.
type Loaded struct {
	// Specs are shared: with the loader (a units.Cache gives the spec it
	// gave before for a file that did not change) and with the units that
	// run them. Nobody modifies one; a hook that would replaces it with a
	// changed copy. A spec that is the one its unit has needs no look at
	// it (diff).
	Specs  []*units.Spec
	Errors []*units.Error // files that did not load; their units keep their last good version

	// ports are the declarations of ports of LoadDir's Loaded, whose Specs
	// hold both units of a clash: the reconciler settles it (settlePorts).
	// nil in a Loaded made otherwise: its Specs all load.
	ports units.Ports

	// hashes are the hashes of the specs that are not the ones of their
	// names in the last load (hashLoaded), by name, computed off Run's
	// goroutine: hashing encodes each spec, and a reload of hundreds of
	// new specs would otherwise hold Run (and every status) for as long.
	hashes map[string]string
}

// hashOf is s's hash: from hashLoaded when it gave one, else computed now
// (a spec of the last load that its unit does not have: contested, or
// the last load was not applied).
func (l Loaded) hashOf(s *units.Spec) string {
	if h, ok := l.hashes[s.Name]; ok {
		return h
	}
	return hash(*s)
}

// Options configure a Reconciler.
type Options struct {
	Role    units.Role // gateway (the default) or worker; see ParseRole
	Spawner Spawner
	// Load reads the units directory; called at Run start, on each value
	// from Changes (unless LoadChanges is set), and by Reload.
	Load func(ctx context.Context) (Loaded, error)
	// LoadChanges, when set, is called instead of Load on a value from
	// Changes: a load that may look only at what changed since the last
	// load (hermesd's looks at the unit files its watcher named), so that
	// an edit among thousands of units costs a look at one file. Load is
	// still what Reload calls: a reload asked for looks at everything,
	// and catches what no event told of.
	LoadChanges func(ctx context.Context) (Loaded, error)
	// Changes delivers "something changed in the units directory or the
	// config file" (package watch). nil: reload only on request.
	Changes <-chan struct{}
	// Checkpoint is the ledger; nil disables re-adoption and the ledger
	// part of port-holder messages.
	Checkpoint Checkpoint
	StateDir   string // default log directory is <StateDir>/logs
	UnitsDir   string // working directory of units that set no workdir
	// NotifySocket is set as NOTIFY_SOCKET in every unit's environment
	// (the shared mode: messages come through Notify).
	NotifySocket string
	// NotifySockets, when set, replaces NotifySocket: each run of a unit
	// that listens for sd_notify gets a socket of its own, and messages
	// come through NotifyOn (the per-unit mode; notify.Sockets).
	NotifySockets NotifySockets
	Env           []string // base environment of units; nil means os.Environ()
	// Lines follows a log file from an offset (logfile.Lines): the log
	// readiness probe. nil disables log probes (they fail).
	Lines func(ctx context.Context, path string, offset int64) (<-chan string, error)
	// OpenLog opens a unit's log file for appending (logfile.Open); nil uses
	// a plain O_APPEND open.
	OpenLog func(path string) (*os.File, error)
	// Logs rotates units' log files as they grow past log.max_size (a
	// *logfile.Logs, run by the caller); nil: no rotation.
	Logs Logs
	// StampOutput sends an owned unit's stdout and stderr through hermesd,
	// which writes each line with the time it read it (output.go); false:
	// every unit writes its log file directly.
	StampOutput bool
	// Relay takes over the copy of a unit's output when its group is
	// released (see RelayFunc, handOver). nil: the release of a unit whose
	// output hermesd copies is refused.
	Relay RelayFunc
	// Supervisor reports the supervisor's status for Status.
	Supervisor func() control.Supervisor
	Daemon     control.Daemon
	Rand       func() float64 // jitter source in [0,1); nil = math/rand/v2
	Logger     *slog.Logger   // nil discards
	// OnReady is called (from Run's goroutine, without blocking) the first
	// time every declared unit has been given its first chance to start, with
	// the number of running units: hermesd's READY=1.
	OnReady func(running int)
	// Runs is the provider proxy's run registry (jobs.go); nil when the
	// proxy is off. ProxyURL is its base URL ("http://127.0.0.1:7411"), the
	// OPENAI_BASE_URL of jobs and proxy_env units; "" when off. ProxyToken
	// returns the proxy token in force, their OPENAI_API_KEY, read at each
	// spawn (it rotates); nil when off. Proxy reports it for Status.
	Runs       Runs
	ProxyURL   string
	ProxyToken func() string
	Proxy      func() *control.Proxy
	// Publish receives what changes (events.go), on Run's goroutine; it
	// must not block. nil publishes nothing.
	Publish func(events.Event)
	// WallClock reads the wall clock that job schedules follow; nil is
	// time.Now. ClockSteps watches the wall clock for steps
	// (wallclock.Watch): started once a job is declared, it runs until
	// its ctx ends and calls stepped after each step, and the schedules
	// are re-armed (jobs.go). nil: a step is noticed only when the next
	// job timer fires.
	WallClock  func() time.Time
	ClockSteps func(ctx context.Context, stepped func()) error
	// Holds keeps the disabled units and the stops by command in the state
	// directory (holds.go): read once by Run before the first load, so
	// before any unit starts, and rewritten at each change. nil: they last
	// as long as the Reconciler.
	Holds *holds.Store
}

// Logs is what the reconciler needs of logfile.Logs: it is told the log
// files to keep within their limits, all of them after the first load;
// then, one by one, those a load or a start changes (Add with no MaxSize
// takes a file out of the set).
type Logs interface {
	Watch(set map[string]logfile.Limits)
	Add(path string, lim logfile.Limits)
}

// Reconciler is the state machine. Create it with New, drive it with Run;
// its control methods (the control.Backend) are safe for concurrent use
// while Run runs.
type Reconciler struct {
	// Set by New, then only read.
	opt    Options
	log    *slog.Logger
	events chan any
	// requests carries control calls (see do) apart from events, so that a
	// status is not queued behind a backlog of exits and timers.
	requests chan request
	done     chan struct{} // closed when Run returns
	// logs are the copied logs open now, and how long one stays open
	// with no write (logSink).
	logs logFiles

	// load serialises reading the units with handing the result to Run
	// (loader.go), so that reads are applied in the order they were made.
	load struct {
		mu   sync.Mutex
		last lastLoad                // guarded by mu (hashmemo.go)
		hash func(units.Spec) string // hash; tests replace it before Run
	}
	// served is what Status serves from on its callers' goroutines,
	// each part guarded by its own mutex.
	served struct {
		rss   rssCache    // the units' RSS, read apart from Run
		snaps statusSnaps // the status snapshots Run publishes (statusnap.go)
	}

	// Owned by Run's goroutine.
	units    map[string]*unit
	errs     []*units.Error
	released []Survivor
	// found is what recover found of dead owners at the start.
	found struct {
		ended     []endedGroup       // their groups it ended
		leftovers []supervisor.Group // their other groups alive
		// held names the units whose released group a dead owner left
		// running: the first load declares them stopped.
		held map[string]bool
	}
	seq     uint64
	shut    *shutdown       // hermesd's clean stop; nil before it (shutdown.go)
	batch   []pendingStop   // stops begun by this pass, for dispatchStops (stop.go)
	base    context.Context // runs' parent; ends after Run's shutdown
	wg      sync.WaitGroup  // goroutines started by Run's goroutine
	jobs    scheduler       // jobs.go
	pace    pace            // the start budget's state across passes (pace.go)
	reloads uint64          // plans applied so far (the first load is 1); see unit.epoch
	ordered []*unit         // order's cache; nil when stale (reorder)
	pub     publisher       // what was published (events.go)

	// disabled, masked and stops are the units kept stopped, by name
	// (holds.go, mask.go).
	disabled, masked, stops map[string]bool
}

// New checks opts and returns a Reconciler ready to Run.
func New(opts Options) (*Reconciler, error) {
	if opts.Spawner == nil || opts.Load == nil {
		return nil, errors.New("reconciler: Spawner and Load are required")
	}
	if opts.Role == "" {
		opts.Role = units.RoleGateway
	}
	if _, err := ParseRole(string(opts.Role)); err != nil {
		return nil, err
	}
	if opts.Rand == nil {
		opts.Rand = rand.Float64
	}
	if opts.Env == nil {
		opts.Env = os.Environ()
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Reconciler{
		opt:      opts,
		log:      log,
		events:   make(chan any, 64),
		requests: make(chan request),
		done:     make(chan struct{}),
		units:    map[string]*unit{},
		disabled: map[string]bool{},
		masked:   map[string]bool{},
		stops:    map[string]bool{},
	}
	r.load.hash, r.found.held = hash, map[string]bool{}
	r.logs.max, r.logs.idle = MaxOpenLogs, logIdle
	// Until Run applies the first load, a status is answered at once with
	// this one: no unit, and since when the units directory is read. From
	// here, not from Run: the control API may serve before Run's goroutine
	// has run, and a status that waited for Run would wait for that read.
	now := time.Now()
	r.served.snaps.cur.Store(&statusSnap{st: control.Status{Daemon: opts.Daemon, Units: []control.Unit{}, Loading: now}, at: now})
	return r, nil
}

// Events.
type (
	exitEvent struct {
		name string
		gen  uint64
		err  error
		left []proc.Identity // exit 0 of a simple unit's leader: the processes it left (Daemons)
	}
	stopDoneEvent struct {
		name string
		gen  uint64
		err  error
	}
	timerEvent struct {
		name string
		gen  uint64
		kind timerKind
	}
	readyEvent struct {
		name string
		gen  uint64
		err  error
	}
	notifyEvent struct {
		socket    string // a unit's own socket (NotifyOn); "" on the shared one
		pid, pgid int
		seen      bool   // the sender's stat was read (it had not exited yet)
		sid       int    // the sender's session
		cgroup    string // the sender's, relative to the cgroup mount
		fields    map[string]string
	}
	// request runs fn on Run's goroutine; fn replies through its own channel.
	request struct{ fn func(ctx context.Context) }
)

// post hands an event to Run; it drops the event once Run has returned.
func (r *Reconciler) post(ev any) {
	select {
	case r.events <- ev:
	case <-r.done:
	}
}

// errStoppedLoading is firstLoad's error when ctx ended first.
var errStoppedLoading = errors.New("stopped while the units directory was being read")

// firstLoad is Options.Load, given up when ctx ends first: a units
// directory on a filesystem that stopped answering must not keep hermesd
// from stopping. The read left behind ends with the process.
func (r *Reconciler) firstLoad(ctx context.Context) (Loaded, error) {
	type result struct {
		l   Loaded
		err error
	}
	got := make(chan result, 1)
	go func() {
		l, err := r.opt.Load(ctx)
		got <- result{l, err}
	}()
	select {
	case res := <-got:
		return res.l, res.err
	case <-ctx.Done():
		return Loaded{}, errStoppedLoading
	}
}

// Run owns the state until ctx ends, then stops hermesd cleanly (SPEC §6):
// owned units stop in reverse dependency order, survivors keep running and
// stay in the ledger. It returns once every goroutine it started has ended:
// nil after a clean stop, or the error that prevented starting.
func (r *Reconciler) Run(ctx context.Context) error {
	defer close(r.done)
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	r.base = base
	defer func() {
		cancelBase()
		r.wg.Wait()
	}()

	r.loadHolds()
	r.load.mu.Lock()                        // a Reload called meanwhile reads after this first load
	loaded, err := r.firstLoad(ctx)         // meanwhile a status is New's loading one
	loading := r.served.snaps.cur.Swap(nil) // a status now waits for the first pass
	if errors.Is(err, errStoppedLoading) {
		r.load.mu.Unlock()
		r.log.Warn("stopped while the units directory was being read: no unit was started", "for", time.Since(loading.st.Loading).Round(time.Millisecond))
		return nil
	}
	if err != nil {
		r.load.mu.Unlock()
		return fmt.Errorf("load units: %w", err)
	}
	r.hashLoaded(&loaded, true)
	r.readopt(ctx, loaded)
	p, n := r.plan(&loaded, false)
	r.apply(ctx, p, loaded, n)
	r.reconcile(ctx)
	r.dispatchStops()
	r.publishChanges(r.order())
	r.served.snaps.step.Add(1)
	r.load.mu.Unlock()
	r.wg.Go(func() { r.followChanges(base) })

	shut := ctx.Done()
	for {
		if r.settled() {
			r.finishShutdown()
			return nil
		}
		// A pass that ran out of its start budget is continued at once,
		// but only after whatever input is already waiting (see pace.go).
		r.step(ctx, &shut, !r.pace.more)
		began := time.Now()
		r.reconcile(ctx)
		r.dispatchStops() // before publishing: the signals first
		r.publishChanges(r.passed())
		r.pace.lap(time.Since(began))
		r.served.snaps.step.Add(1)
		r.publishStatus()
	}
}

// input is what step received.
type input int

const (
	inputNone input = iota
	inputShut
	inputEvent
)

// step takes one input (a shutdown, a control request or an event) and
// handles it. With wait false it returns at once when none is ready.
// Changes of the units arrive as requests, once read (see loader.go).
func (r *Reconciler) step(ctx context.Context, shut *<-chan struct{}, wait bool) {
	in, ev := inputNone, any(nil)
	select { // a control call first: it has a caller waiting
	case req := <-r.requests:
		r.served.snaps.step.Add(1) // a snapshot built by the input is not the state after the pass
		r.handle(ctx, req)
		return
	default:
	}
	if wait {
		r.served.snaps.idle.Store(true) // a status asked now is built at once (statusnap.go)
		select {
		case <-*shut:
			in = inputShut
		case req := <-r.requests:
			in, ev = inputEvent, req
		case ev = <-r.events:
			in = inputEvent
		}
		r.served.snaps.idle.Store(false)
		r.leftIdle()
	} else {
		select {
		case <-*shut:
			in = inputShut
		case req := <-r.requests:
			in, ev = inputEvent, req
		case ev = <-r.events:
			in = inputEvent
		default:
		}
	}
	r.served.snaps.step.Add(1) // input or not, the pass to come may answer a caller (statusSnaps.seen)
	switch in {
	case inputShut:
		*shut = nil
		r.beginShutdown()
	case inputEvent:
		r.handle(ctx, ev)
		r.drainEvents(ctx)
	}
}

// drainEvents handles the events already waiting, up to the queue's
// capacity, so that one pass follows them all. Every pass but those of
// hermesd's clean stop (shutdown.go) looks at every unit: a pass per
// event made a stop of n units (an exit, a stop's end and an empty group
// each) cost n passes of n units each. Control calls are not taken here:
// a caller sees the state a pass left.
func (r *Reconciler) drainEvents(ctx context.Context) {
	for range cap(r.events) {
		select {
		case ev := <-r.events:
			r.handle(ctx, ev)
		default:
			return
		}
	}
}

func (r *Reconciler) nextGen() uint64 { r.seq++; return r.seq }

// handle applies one event. Stale events (another gen) are dropped.
func (r *Reconciler) handle(ctx context.Context, ev any) {
	r.shut.touch(ev)
	switch ev := ev.(type) {
	case request:
		ev.fn(ctx)
	case exitEvent:
		r.onExit(ev)
	case stopDoneEvent:
		r.onStopDone(ctx, ev)
	case emptiedEvent:
		r.onEmptied(ctx, ev)
	case timerEvent:
		r.onTimer(ev)
	case readyEvent:
		r.onReady(ev)
	case mainEvent:
		r.onMain(ev)
	case goneEvent:
		r.onGone(ev)
	case notifyEvent:
		r.onNotify(ev)
	case jobEvent:
		r.onJob(ev)
	case releasedGone:
		r.dropReleased(ev.g)
	}
}

// onExit stops a running unit whose leader exited, unless the exit leaves
// the unit running (leaderLeft: a forking launcher, or daemons left behind).
func (r *Reconciler) onExit(ev exitEvent) {
	u := r.units[ev.name]
	if u == nil || u.gen != ev.gen || !u.state.active() || u.state == Stopping {
		return
	}
	if r.leaderLeft(u, ev) {
		return
	}
	cause := ev.err
	if u.adopted() && cause == nil {
		cause = errExitUnknown
	}
	r.log.Info("unit exited", "unit", u.spec.Name, "pid", u.run.group.Leader.PID, "err", cause)
	r.stop(u, stopFailure, exitCause{cause})
}

// onReady applies a probe's outcome to a starting unit: a failed probe
// stops it, a passed one makes it ready (a forking unit once its main
// process is found too). A probe cancelled with its run is ignored.
func (r *Reconciler) onReady(ev readyEvent) {
	u := r.units[ev.name]
	if u == nil || u.gen != ev.gen || u.state != Starting {
		return
	}
	if ev.err != nil {
		if errors.Is(ev.err, context.Canceled) {
			return
		}
		r.stop(u, stopFailure, fmt.Errorf("%w: %w", errProbe, ev.err))
		return
	}
	if u.spec.Type == units.Forking && u.run.main.IsZero() {
		u.run.probed = true // ready once the main process is found too (onMain)
		return
	}
	r.markReady(u)
}

// errExitUnknown: a re-adopted group's leader is not our child, so its exit
// status cannot be read.
var errExitUnknown = errors.New("exited (status unknown: not our child)")

// exitCause marks a failure that is a plain exit: a nil err is a success.
type exitCause struct{ err error }

func (e exitCause) Error() string {
	if e.err == nil {
		return "exited with status 0"
	}
	return e.err.Error()
}

func (e exitCause) Unwrap() error { return e.err }

// Timeout causes.
var (
	ErrStartTimeout = errors.New("not ready within the start timeout")
	ErrWatchdog     = errors.New("no WATCHDOG=1 within the watchdog timeout")
	ErrRuntimeMax   = errors.New("ran for its runtime_max")
	ErrStartLimit   = errors.New("start limit hit")
)

func (r *Reconciler) onTimer(ev timerEvent) {
	u := r.units[ev.name]
	if u == nil || u.gen != ev.gen || ev.kind != timerBackoff && u.run == nil {
		return
	}
	*u.timer(ev.kind) = nil // it fired
	switch ev.kind {
	case timerBackoff:
		if u.state == BackingOff {
			u.state = Inactive // reconcile starts it
		}
	case timerStart:
		if u.state == Starting && u.run.launched && u.run.main.IsZero() {
			return // findMain has the same deadline, and says why the main process was not found
		}
		if u.state == Starting {
			r.stop(u, stopFailure, startTimeout(u))
		}
	case timerWatchdog:
		if u.state == Starting || u.state == Running {
			r.stop(u, stopFailure, fmt.Errorf("%w (%s)", ErrWatchdog, u.spec.Timeouts.Watchdog))
		}
	case timerRuntime:
		if u.state == Starting || u.state == Running {
			r.stop(u, stopFailure, fmt.Errorf("%w (%s)", ErrRuntimeMax, u.spec.Timeouts.RuntimeMax))
		}
	}
}

func (r *Reconciler) arm(u *unit, k timerKind, d time.Duration) {
	t := u.timer(k)
	stopTimer(t)
	name, gen := u.spec.Name, u.gen
	*t = time.AfterFunc(d, func() { r.post(timerEvent{name, gen, k}) })
}

// markReady makes u's starting run ready: state Running is being ready.
func (r *Reconciler) markReady(u *unit) {
	u.state = Running
	u.stopTimer(timerStart)
	pid := u.run.group.Leader.PID
	if !u.run.main.IsZero() {
		pid = u.run.main.PID // forking: the daemon, not its launcher
	}
	r.log.Info("unit ready", "unit", u.spec.Name, "pid", pid)
}

// onNotify applies an sd_notify message to the unit it is of
// (notifySender): the one whose group sent it, or whose socket it came on.
func (r *Reconciler) onNotify(ev notifyEvent) {
	u := r.notifySender(ev)
	if u == nil {
		r.log.Debug("notify message from a process of no unit", "pid", ev.pid, "socket", ev.socket)
		return
	}
	if ev.fields["READY"] == "1" && u.state == Starting && u.spec.Ready.Notify {
		r.markReady(u)
	}
	if ev.fields["WATCHDOG"] == "1" && u.spec.Timeouts.Watchdog > 0 {
		r.arm(u, timerWatchdog, u.spec.Timeouts.Watchdog)
	}
	if s, ok := ev.fields["STATUS"]; ok {
		r.log.Debug("unit status", "unit", u.spec.Name, "status", s)
	}
}

// Notify hands an sd_notify message received on the shared NOTIFY_SOCKET
// to Run, as NotifyOn does for a unit's own: the sender's group is
// resolved at once, since systemd-notify exits right after sending.
func (r *Reconciler) Notify(pid int, fields map[string]string) { r.NotifyOn("", pid, fields) }

// ask runs fn on Run's goroutine and returns what it returns, or do's
// error (ErrStopped, ctx's) when fn did not run to its end.
func ask[T any](ctx context.Context, r *Reconciler, fn func(ctx context.Context) (T, error)) (T, error) {
	var v T
	var err error
	if e := r.do(ctx, func(ctx context.Context) { v, err = fn(ctx) }); e != nil {
		var zero T
		return zero, e
	}
	return v, err
}

// doErr is ask for an fn that returns only an error.
func (r *Reconciler) doErr(ctx context.Context, fn func(ctx context.Context) error) error {
	_, err := ask(ctx, r, func(ctx context.Context) (struct{}, error) { return struct{}{}, fn(ctx) })
	return err
}

// doAwait is ask for an fn that returns the channel an outcome arrives on
// (nil: none to wait for): unless fn failed, it then waits for it (await).
func (r *Reconciler) doAwait(ctx context.Context, fn func(ctx context.Context) (<-chan error, error)) error {
	wait, err := ask(ctx, r, fn)
	if err != nil {
		return err
	}
	return r.await(ctx, wait)
}

// do runs fn on Run's goroutine and waits for it to return; the statuses
// asked after it returns show what fn did (statusSnaps.answered).
func (r *Reconciler) do(ctx context.Context, fn func(ctx context.Context)) error {
	return r.call(ctx, true, fn)
}

// call is do; with answer false, what fn did is not a caller's answer
// that later statuses must show (a reload that no caller asked for, the
// build of a status).
func (r *Reconciler) call(ctx context.Context, answer bool, fn func(ctx context.Context)) error {
	if answer {
		defer r.served.snaps.answered()
	}
	ran := make(chan struct{})
	req := request{fn: func(ctx context.Context) { fn(ctx); close(ran) }}
	select {
	case r.requests <- req:
	case <-r.done:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ran:
		return nil
	case <-r.done:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}

// reorder drops the cached order: a unit was added or removed, or its
// after or requires may have changed. Every change of r.units calls it.
func (r *Reconciler) reorder() { r.ordered = nil }

// order returns the units sorted so that every unit comes after the units it
// names in after and requires (ties and cycles broken by name). The result
// is cached until reorder (each event's pass, and each status, would sort
// every unit otherwise); callers must not modify it.
func (r *Reconciler) order() []*unit {
	if r.ordered != nil && len(r.ordered) == len(r.units) {
		return r.ordered
	}
	r.ordered = depOrder(r.units, func(u *unit) *units.Spec { return u.spec })
	return r.ordered
}

// depOrder lists the values of by so that each comes after the values it
// names (spec) in after and requires, ties and cycles broken by name.
func depOrder[T any](by map[string]T, spec func(T) *units.Spec) []T {
	seen := map[string]bool{}
	var out []T
	var visit func(n string)
	visit = func(n string) {
		x, ok := by[n]
		if !ok || seen[n] {
			return
		}
		seen[n] = true
		s := spec(x)
		for _, d := range slices.Sorted(slices.Values(slices.Concat(s.After, s.Requires))) {
			visit(d)
		}
		out = append(out, x)
	}
	for _, n := range slices.Sorted(maps.Keys(by)) {
		visit(n)
	}
	return out
}

// inFlight indexes, for one reconcile pass, the stops a start could clash
// with: the reload stop of the earliest reload still under way, and the
// ports declared by every stopping unit. Built once per pass (a pass
// visits every unit, and most of them may be waiting) and kept current by
// the stops the pass itself begins.
type inFlight struct {
	reload *unit          // the stopping unit whose reload stop began first; nil when none
	ports  map[int]string // port → a stopping unit that declares it
}

func (r *Reconciler) inFlight() inFlight {
	f := inFlight{ports: map[int]string{}}
	for _, c := range r.order() {
		f.add(c)
	}
	return f
}

// add records c if it is stopping.
func (f *inFlight) add(c *unit) {
	if c.state != Stopping {
		return
	}
	if e := c.stop.epoch; c.stop.forReload() && (f.reload == nil || e < f.reload.stop.epoch ||
		(e == f.reload.stop.epoch && c.spec.Name < f.reload.spec.Name)) {
		f.reload = c
	}
	for _, p := range c.spec.Ports {
		f.ports[p] = c.spec.Name
	}
}

// blocked says why u cannot start now, or "". A start waits only for the
// stops it could clash with (a unit's own previous run is never replaced
// before its group is empty: the unit is Stopping until then):
//   - the stops begun by the reload that produced u's version, or by an
//     earlier one: a renamed unit never meets its old self, on a port or
//     anything else, and a reload's starts follow its stops;
//   - the stop of any unit that declares one of u's ports.
//
// Stops begun by later reloads do not hold u: under a stream of edits some
// stop is always under way, and waiting for all of them would hold every
// start until the edits end.
func (r *Reconciler) blocked(u *unit, f *inFlight) string {
	if c := f.reload; c != nil && c.stop.epoch <= u.epoch {
		return "waiting for " + c.spec.Name + " to stop (reload)"
	}
	for _, p := range u.spec.Ports {
		if n, ok := f.ports[p]; ok {
			return fmt.Sprintf("waiting for %s to stop: it declares port %d too", n, p)
		}
	}
	if u.takenBy != 0 {
		for _, s := range r.released {
			if s.Group.PGID == u.takenBy {
				return fmt.Sprintf("name %s is taken by a released group (pgid %d), adopted under it; stop that group to start the unit", u.spec.Name, u.takenBy)
			}
		}
	}
	for _, d := range u.spec.After {
		dep := r.units[d]
		if dep == nil {
			if e := r.unloaded(d); e != nil {
				return "waiting for " + d + ", whose unit file does not load: " + wireError(e).String()
			}
			continue
		}
		if !afterMet(dep) {
			return afterWait(dep)
		}
	}
	for _, d := range u.spec.Requires {
		dep := r.units[d]
		if dep == nil {
			if e := r.unloaded(d); e != nil {
				return "requires " + d + ", whose unit file does not load: " + wireError(e).String()
			}
			return "requires " + d + ", which is not declared"
		}
		if !r.up(dep) {
			return "requires " + d + ", which is " + string(r.stateWord(dep))
		}
	}
	return ""
}

// unloaded is the first error of the unit file of name, a unit with no
// version loaded (its file never loaded), or nil. A dependent waits for
// such a unit as for one that is not ready: its file is there, only broken
// (a typo in migrate.yaml must not let app run before its migration).
// Run's goroutine only.
func (r *Reconciler) unloaded(name string) *units.Error {
	for _, e := range r.errs {
		if n, ok := r.unitFileOf(e); ok && n == name {
			return e
		}
	}
	return nil
}

// up: a required unit that counts as present. A oneshot that is done
// stays up (as in systemd, its end is no stop); stopping it is.
func (r *Reconciler) up(dep *unit) bool {
	switch dep.state {
	case Waiting, Starting, Running, Done:
		return true
	}
	return false
}

// afterMet reports whether a unit named in after: lets its dependents
// start: a oneshot once done (exit 0), any other once ready.
func afterMet(dep *unit) bool {
	if dep.spec.Type == units.Oneshot {
		return dep.state == Done
	}
	return dep.state == Running
}

// afterWait says what a dependent of dep waits for.
func afterWait(dep *unit) string {
	d := dep.spec.Name
	switch {
	case (dep.state == Failed || dep.state == BackingOff) && dep.err != nil:
		return "waiting for " + d + ", which failed: " + dep.err.Error()
	case dep.spec.Type == units.Oneshot:
		return "waiting for " + d + " to be done (exit 0)"
	}
	return "waiting for " + d + " to be ready"
}

// reconcile walks the units in dependency order and acts on each; during
// hermesd's clean stop, it stops those shutdownPass looks at.
func (r *Reconciler) reconcile(ctx context.Context) {
	r.pace.passes++
	r.pace.starting = 0
	r.schedule()
	if r.shut != nil {
		r.shutdownPass()
		return
	}
	order := r.order()
	r.pace.more = false
	pass := r.pace.pass()
	stops := r.inFlight()
	for _, u := range order {
		switch u.state {
		case Inactive, Waiting:
			if r.startOrWait(ctx, u, &pass, &stops) {
				pass.started++
			}
		case Starting, Running:
			r.stopIfRequiredDown(u, &stops)
		}
	}
	r.pace.starting = pass.starting
	r.reportReady()
}

// startOrWait starts an inactive or waiting unit, or leaves it inactive
// (disabled, not enabled) or waiting (blocked, or over this pass's start
// budget: r.pace.more asks for another pass). It reports whether it started u.
func (r *Reconciler) startOrWait(ctx context.Context, u *unit, pass *startPass, stops *inFlight) bool {
	if !u.enabled || (r.disabled[u.spec.Name] || r.masked[u.spec.Name]) && !u.external {
		u.state = Inactive
		return false
	}
	if why := r.blocked(u, stops); why != "" {
		u.state, u.waitMsg = Waiting, why
		return false
	}
	if !pass.allows() && u != r.pace.asked {
		u.state, u.waitMsg = Waiting, waitQueued
		r.pace.more = true
		return false
	}
	u.waitMsg = ""
	began := time.Now()
	r.start(ctx, u)
	pass.starting += time.Since(began)
	return true
}

// stopIfRequiredDown stops a starting or running unit one of whose required
// units is gone or down, unless a stop is already on its way.
func (r *Reconciler) stopIfRequiredDown(u *unit, stops *inFlight) {
	if !u.enabled || u.stop.forReload() {
		return // a stop is already on its way via a command or reload
	}
	for _, d := range u.spec.Requires {
		if dep := r.units[d]; dep == nil || !r.up(dep) {
			r.log.Info("required unit went down; stopping", "unit", u.spec.Name, "requires", d)
			r.stop(u, stopRequires, nil)
			stops.add(u)
			return
		}
	}
}

// reportReady calls Options.OnReady once, after the first pass that left
// no start for a later one, with the number of units starting or running.
func (r *Reconciler) reportReady() {
	if r.pace.readied || r.opt.OnReady == nil || r.pace.more {
		return
	}
	r.pace.readied = true
	n := 0
	for _, u := range r.units {
		if u.state == Running || u.state == Starting {
			n++
		}
	}
	r.opt.OnReady(n)
}
