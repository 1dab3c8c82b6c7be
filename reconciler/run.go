package reconciler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/logfile"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
)

// start spawns u (Run's goroutine). On a start limit or a held port the unit
// is left failed; on a spawn error the restart policy decides.
func (r *Reconciler) start(ctx context.Context, u *unit) {
	if r.reclaim(ctx, u) {
		return
	}
	now := time.Now()
	if !r.mayStart(ctx, u, now) {
		return
	}
	logPath := r.logPath(*u.spec)
	f, err := r.openLog(logPath)
	if err != nil {
		r.fail(u, fmt.Errorf("unit %s: open log: %w", u.spec.Name, withFDFix(err)))
		return
	}
	sock, err := r.openNotify(*u.spec)
	if err != nil {
		f.Close()
		r.fail(u, err)
		return
	}
	var offset int64
	if st, err := f.Stat(); err == nil {
		offset = st.Size()
	}
	out, err := r.logOutput(u, f, logPath)
	if err != nil {
		f.Close()
		r.closeNotify(sock)
		r.fail(u, fmt.Errorf("unit %s: log pipe: %w", u.spec.Name, withFDFix(err)))
		return
	}
	jr := r.beginJobRun(u, now)
	spec, err := r.spawnSpec(u, out, logPath, sock, jr)
	var p Process
	if err == nil {
		p, err = r.opt.Spawner.Spawn(context.WithoutCancel(ctx), spec)
	}
	out.started()
	f.Close() // the child holds its own descriptor; copiers open the log when they write
	u.starts = append(u.starts, now)
	if u.logPath != logPath && u.logPath != "" {
		r.unwatchLog(u) // its file moved (log.path changed)
	}
	u.logPath = logPath
	if r.opt.Logs != nil && r.shut == nil {
		r.opt.Logs.Add(logPath, logLimits(*u.spec)) // its file exists now: watch it (no max_size: out of the set)
	}
	if err != nil {
		jr.end()
		r.closeNotify(sock)
		u.run = nil // what is left of a run whose stop failed is forgotten
		r.afterRun(u, 0, spawnError(*u.spec, err))
		r.endJobRun(u, time.Now())
		return
	}
	rn := r.began(u, p, now, sock)
	rn.output = out.copying
	r.log.Info("unit started", "unit", u.spec.Name, "pid", rn.group.Leader.PID, "pgid", rn.group.PGID)
	r.watchJobRun(rn.ctx, u, jr)
	r.watchExit(u, p)
	r.armRun(u, logPath, offset)
}

// mayStart checks u's start limit and declared ports before a spawn; it
// leaves u failed, and reports false, when either refuses the start.
func (r *Reconciler) mayStart(ctx context.Context, u *unit, now time.Time) bool {
	hit, kept := StartLimitHit(u.starts, now, u.spec.StartLimit)
	u.starts = kept
	if hit {
		r.fail(u, &StartLimitError{Unit: u.spec.Name, Burst: u.spec.StartLimit.Burst, Interval: u.spec.StartLimit.Interval, Last: lastCause(u.err)})
		return false
	}
	if err := r.forkingSurvivorRefused(u); err != nil {
		r.fail(u, err)
		return false
	}
	if len(u.spec.Ports) > 0 {
		if err := checkPorts(ctx, u.spec.Name, u.spec.Ports, r.opt.Checkpoint); err != nil {
			r.fail(u, err)
			return false
		}
	}
	return true
}

// StartLimitError is a start refused by the unit's start limit: Burst
// starts in Interval already. Last is how the latest of them ended (nil
// when no error was kept), so that the row keeps the cause once the
// restarts stop. It matches ErrStartLimit.
type StartLimitError struct {
	Unit     string
	Burst    int
	Interval time.Duration
	Last     error
}

func (e *StartLimitError) Error() string {
	summary, detail := e.Parts()
	return summary + "; " + detail
}

// Parts is e's text as what happened (the limit, and the last failure)
// and what to do about it.
func (e *StartLimitError) Parts() (summary, detail string) {
	summary = fmt.Sprintf("%v: %d starts in %s", ErrStartLimit, e.Burst, e.Interval)
	if e.Last != nil {
		summary += fmt.Sprintf("; last: %v", e.Last)
	}
	if outOfDescriptors(e.Last) { // the last cause says how to get descriptors
		return summary, fmt.Sprintf("then run `hermesctl start %s`", e.Unit)
	}
	return summary, fmt.Sprintf("fix the unit, then run `hermesctl start %s`", e.Unit)
}

// Unwrap is ErrStartLimit alone: Last is what came before, not this
// error's kind (a start limit is no spawn failure).
func (e *StartLimitError) Unwrap() error { return ErrStartLimit }

// lastCause is a unit's last error as a start limit names it: the failure
// without the restart that was to follow, and a program found in no
// directory of PATH by its name alone (the unit and the spawn are said
// already; the fix is the limit's).
func lastCause(err error) error {
	var bo backingOff
	if errors.As(err, &bo) {
		err = bo.cause
	}
	var nf *supervisor.NotFoundError
	if errors.As(err, &nf) {
		return nf
	}
	return err
}

// backingOff is a unit's error while a restart is scheduled: the failed
// run's cause, and the delay before the restart.
type backingOff struct {
	cause error
	in    time.Duration
}

func (e backingOff) Error() string {
	return fmt.Sprintf("%v; restarting in %s", e.cause, e.in.Round(time.Millisecond))
}

func (e backingOff) Unwrap() error { return e.cause }

// spawnSpec is what the Spawner is given to start u, writing its output
// to out (the log file itself for a survivor, pipes into hermesd for an
// owned unit; logOutput), with sock its NOTIFY_SOCKET ("" when none);
// jr is the job run it begins, or nil.
// Survive is set for adoptable and persist_on_release units under a
// gateway, and for persist_on_release under a worker (SPEC §3). The
// unit's env files are read now, at each start: one that is missing (and
// not optional) or that holds a bad line fails the start, named.
func (r *Reconciler) spawnSpec(u *unit, out output, logPath, sock string, jr *jobRun) (supervisor.Spec, error) {
	dir := u.spec.Workdir
	if dir == "" {
		dir = r.opt.UnitsDir
	}
	fileEnv, err := units.ReadEnvFiles(u.spec.EnvFiles)
	if err != nil {
		return supervisor.Spec{}, err
	}
	return supervisor.Spec{
		Unit:      u.spec.Name,
		Argv:      argv(*u.spec),
		Env:       append(r.env(*u.spec, sock, append(userEnv(u.spec.Exec), fileEnv...)), r.proxyEnv(*u.spec, jr)...),
		Dir:       dir,
		Stdout:    out.stdout,
		Stderr:    out.stderr,
		Ownership: ownership(*u.spec),
		Reason:    u.spec.Reason,
		LogPath:   logPath,
		Survive:   keeps(r.opt.Role, u.spec.Ownership),
		Exec:      u.spec.Exec,
	}, nil
}

// began makes the process p spawned at now, with its notify socket sock,
// u's starting run, under a new gen.
func (r *Reconciler) began(u *unit, p Process, now time.Time, sock string) *run {
	rn := r.newRun(p, p.Group(), now)
	rn.notifySock = sock
	u.gen, u.run, u.state = r.nextGen(), rn, Starting
	var bo backingOff
	if errors.As(u.err, &bo) {
		u.err = bo.cause // the restart it promised has begun
	}
	return rn
}

// watchExit posts u's exitEvent when p exits, unless the run ends first.
// A simple unit's exit 0 carries the members its group still has (daemons
// left behind), read off Run's goroutine: a /proc scan in pgroup mode.
func (r *Reconciler) watchExit(u *unit, p Process) {
	daemons, _ := r.opt.Spawner.(Daemons)
	simple := u.spec.Type != units.Oneshot && u.spec.Type != units.Forking
	runCtx, g := u.run.ctx, u.run.group
	name, gen := u.spec.Name, u.gen
	exited := func() {
		ev := exitEvent{name: name, gen: gen, err: p.Err()}
		// A run whose stop has begun is not asked what it left: its
		// exit is the stop's (and Run drops the event).
		if daemons != nil && simple && ev.err == nil && runCtx.Err() == nil {
			ev.left = daemons.Members(g) // off Run's goroutine: a /proc scan in pgroup mode
		}
		r.post(ev)
	}
	ae, ok := p.(afterExiter)
	if !ok {
		r.wg.Go(func() {
			select {
			case <-p.Done():
				exited()
			case <-runCtx.Done():
			}
		})
		return
	}
	// No goroutine waits while the unit runs: the first of the two funcs
	// to run ends the other's arrangement (mu: both are set before
	// either reads the other's); wg counts the one to come.
	r.wg.Add(1)
	var mu sync.Mutex
	var stopRun, stopExit func() bool
	mu.Lock()
	defer mu.Unlock()
	stopRun = context.AfterFunc(runCtx, func() {
		mu.Lock()
		stop := stopExit
		mu.Unlock()
		if stop() {
			r.wg.Done()
		}
	})
	stopExit = ae.AfterExit(func() {
		defer r.wg.Done()
		mu.Lock()
		stop := stopRun
		mu.Unlock()
		stop()
		if runCtx.Err() == nil {
			exited()
		}
	})
}

// afterExiter is a Process that runs a func once its leader has exited
// (supervisor.Child.AfterExit), so that no goroutine need wait for it.
type afterExiter interface {
	AfterExit(f func()) (stop func() bool)
}

// armRun arms u's runtime_max and watchdog timers, then its readiness: at
// once for a unit with no probe, by READY=1 or the probe (reading the log
// from offset) within the start timeout otherwise. A oneshot has none: it
// is done at exit 0 (afterRun).
func (r *Reconciler) armRun(u *unit, logPath string, offset int64) {
	if t := u.spec.Timeouts.RuntimeMax; t > 0 {
		r.arm(u, timerRuntime, t)
	}
	if t := u.spec.Timeouts.Watchdog; t > 0 {
		r.arm(u, timerWatchdog, t)
	}
	if u.spec.Type == units.Oneshot {
		// Done at exit 0 (afterRun), with no probe and, as in systemd, no
		// start timeout: runtime_max bounds a step that hangs.
		return
	}
	rd := u.spec.Ready
	if rd == (units.Ready{}) && u.spec.Type != units.Forking {
		r.markReady(u)
		return
	}
	if t := u.spec.Timeouts.Start; t > 0 {
		r.arm(u, timerStart, t)
	}
	if rd.Notify || rd == (units.Ready{}) {
		return // READY=1 arrives through Notify; a forking unit without a probe is ready once its main process is found
	}
	name, gen, lines, runCtx := u.spec.Name, u.gen, r.opt.Lines, u.run.ctx
	var own *listenerCheck
	if rd.TCP != "" || rd.HTTP != "" {
		own = r.listenerCheck(u)
	}
	r.wg.Go(func() {
		err := probe(runCtx, rd, logPath, offset, lines, own)
		r.post(readyEvent{name, gen, err})
	})
}

// listenerCheck is the check of u's tcp or http probe for its current
// run: the members are its group's (Daemons.Members; the process group's
// with a Spawner without Daemons), and each verdict lands on its listener on
// Run's goroutine, for status and the start timeout's error.
func (r *Reconciler) listenerCheck(u *unit) *listenerCheck {
	g, name, gen := u.run.group, u.spec.Name, u.gen
	d, _ := r.opt.Spawner.(Daemons)
	return &listenerCheck{
		members: func() []int {
			if d == nil {
				pids, _ := proc.GroupMembers(g.PGID)
				return pids
			}
			var pids []int
			for _, id := range d.Members(g) {
				pids = append(pids, id.PID)
			}
			return pids
		},
		note: func(e *ListenerError) {
			r.post(request{fn: func(context.Context) {
				if u := r.units[name]; u != nil && u.gen == gen && u.state == Starting {
					u.run.listener = e
				}
			}})
		},
	}
}

// fail leaves u failed with err, no restart.
func (r *Reconciler) fail(u *unit, err error) {
	r.log.Error("unit failed", "unit", u.spec.Name, "err", err)
	u.state, u.err = Failed, err
}

// afterRun applies the restart policy once a run that lasted ran has ended
// and its group is empty (or a spawn failed). cause is an exitCause for a
// plain exit (nil inside: status 0).
func (r *Reconciler) afterRun(u *unit, ran time.Duration, cause error) {
	var ec exitCause
	success := errors.As(cause, &ec) && ec.err == nil
	var restart bool
	switch u.spec.Restart {
	case units.RestartAlways:
		restart = true
	case units.RestartOnFailure:
		restart = !success && !errors.Is(cause, ErrBudgetExceeded) // a run stopped at its budget is over
	}
	if u.spec.Type == units.Oneshot && success {
		// A oneshot's success is its end: never run again on its own
		// (restart: always is refused at load).
		restart = false
	}
	if !restart || !u.enabled {
		switch {
		case success && u.spec.Type == units.Oneshot:
			u.state, u.err = Done, nil
			r.log.Info("unit done", "unit", u.spec.Name)
		case success:
			u.state, u.err = Exited, nil
		default:
			r.fail(u, cause)
		}
		return
	}
	if Stable(ran, u.spec.RestartMax) {
		u.attempt = 0
	}
	d := Backoff(u.spec.RestartSec, u.spec.RestartMax, u.attempt, r.opt.Rand())
	u.attempt++
	u.restarts++
	u.state = BackingOff
	u.err = backingOff{cause, d}
	u.gen = r.nextGen()
	r.log.Warn("unit failed; restarting", "unit", u.spec.Name, "err", cause, "in", d)
	r.arm(u, timerBackoff, d)
}

// stop begins stopping u's group: stop signal, grace, KILL, until empty.
// The stop is queued in r.batch and begun with the other stops of the
// same pass (dispatchStops, stop.go). What follows depends on why (see
// stopped).
func (r *Reconciler) stop(u *unit, why stopReason, cause error) {
	if r.shut != nil {
		r.shut.touched[u.spec.Name] = true
	}
	if u.state == Stopping {
		u.stop.why = why
		return
	}
	if !u.state.active() {
		return
	}
	// The run's timers end now; its context, which wakes its watchers,
	// once the batch is handed over (dispatchStops).
	rn := u.run
	rn.stopTimers()
	if u.stop == nil { // else one that failed: its reload's version or removal applies once this one is done
		u.stop = &stopping{}
	}
	u.state, u.stop.why, u.stop.cause = Stopping, why, cause
	u.gen = r.nextGen()
	// Handed to the spawner with the other stops of this pass once the
	// pass is over (dispatchStops, stop.go): every group of a batch gets
	// its signal before any is waited for.
	r.batch = append(r.batch, pendingStop{name: u.spec.Name, gen: u.gen, p: rn.proc, cancel: rn.cancel,
		order: supervisor.StopOrder{Group: rn.group, Main: rn.main, Signal: stopSignal(*u.spec), Grace: stopGrace(*u.spec)}})
}

// stopped runs once u's group is empty (or Stop failed): the run ends.
func (r *Reconciler) stopped(ctx context.Context, u *unit, err error) {
	rn, st := u.run, u.stop
	r.closeNotify(rn.notifySock)
	if err != nil {
		r.fail(u, fmt.Errorf("unit %s: stop: %w", u.spec.Name, err))
		st.reply(u.err)
		return
	}
	u.run, u.stop = nil, nil
	u.leader = nil
	if rn.proc != nil && !rn.launched {
		u.leader = rn.proc
	}
	// An adopted group, now empty, has nothing to restart; a reload's
	// removal or new version applies whatever stop came last (a command,
	// a restart, shutdown): the file is the truth.
	if u.external || st.removed {
		r.unwatchLog(u)
		delete(r.units, u.spec.Name)
		r.reorder()
		r.declare(u, 0)
		st.reply(nil)
		return
	}
	if st.next != nil {
		r.replace(u, *st.next)
	}
	switch st.why {
	case stopFailure:
		r.afterRun(u, time.Since(rn.started), st.cause)
	case stopCommand:
		u.state, u.enabled = Inactive, false
	case stopRestart, stopRequires, stopShutdown, stopReload:
		u.state = Inactive
	}
	r.endJobRun(u, time.Now())
	if len(st.waiters) > 0 {
		// A Restart caller hears once the new run is started (startErr);
		// otherwise the pass that follows every event (Run) starts it.
		r.pace.asked = u
		r.reconcile(ctx)
		r.pace.asked = nil
	}
	st.reply(u.startErr())
}

// spawnError is the error of a failed spawn of s. The spawner's error says
// "spawn" and names the unit already, so only the unit prefix of every unit
// error is added; a program in no directory of PATH also gets what to do,
// and where (units.Spec carries no line numbers: the file).
func spawnError(s units.Spec, err error) error {
	if errors.Is(err, exec.ErrNotFound) && len(s.Command) > 0 {
		where := ""
		if s.File != "" {
			where = " of " + s.File
		}
		return fmt.Errorf("unit %s: %w; install it, or write its absolute path in command:%s", s.Name, spawnFailed{err}, where)
	}
	return fmt.Errorf("unit %s: %w", s.Name, withFDFix(spawnFailed{err}))
}

// withFDFix is err with fdFix after it when it is hermesd's descriptor
// table, or the system's, being full (EMFILE, ENFILE): the unit is not at
// fault, hermesd's limit is.
func withFDFix(err error) error {
	if outOfDescriptors(err) {
		return fmt.Errorf("%w; %s", err, fdFix)
	}
	return err
}

// fdFix is what to do when hermesd is short of descriptors (withFDFix).
const fdFix = "hermesd is out of file descriptors: raise its hard limit (LimitNOFILE= in a systemd unit, `ulimit -Hn` as root, /etc/security/limits.conf), or declare fewer units"

// outOfDescriptors reports whether err is a process's or the system's
// descriptor table being full (EMFILE, ENFILE).
func outOfDescriptors(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// exitStatus is the exit status of u's latest run's leader, in the
// shell's convention (128+N: killed by signal N); ok is false before one
// was reaped, and when its status is unknown (see unit.leader).
func (u *unit) exitStatus() (status int, ok bool) {
	if rn := u.run; rn != nil && rn.proc != nil && !rn.launched {
		if s, ok := reaped(rn.proc); ok { // its run not over yet: its status is the latest
			return s, true
		}
	}
	if u.leader == nil {
		return 0, false
	}
	return reaped(u.leader)
}

// reaped is p's exit status once it has been reaped, as exitStatus says.
func reaped(p Process) (status int, ok bool) {
	select {
	case <-p.Done():
	default:
		return 0, false
	}
	var ee *supervisor.ExitError
	switch err := p.Err(); {
	case err == nil:
		return 0, true
	case errors.As(err, &ee):
		return ee.Status(), true
	}
	return 0, false // the wait failed: no status
}

// startErr is the outcome of a start a caller asked for (Start, Restart),
// read once the pass that started it has run: the error of a spawn that
// failed, whether the unit is then left failed or backing off towards a
// retry (restart: on-failure). Start and Restart share it, so that they
// say the same thing and exit alike.
func (u *unit) startErr() error {
	if u.state == Failed || u.state == BackingOff {
		return u.err
	}
	return nil
}

// declare adds the unit file that waited for external unit x's name (if
// any), once x is gone from r.units; takenBy is the pgid of x's group when
// it was released rather than ended (the unit waits for it to end).
func (r *Reconciler) declare(x *unit, takenBy int) {
	if x.declared == nil {
		return
	}
	v := *x.declared
	s := v.spec
	held := r.heldAtDeclare(s.Name)
	// pub: the name's events go on from what was last said of x.
	r.units[s.Name] = &unit{spec: s, hash: v.hash, enabled: !s.IsJob() && !held, held: held, epoch: v.epoch, takenBy: takenBy, pub: x.pub}
	r.reorder()
	r.log.Info("adopted group gone; its name goes to the unit file", "unit", s.Name, "file", s.File)
}

// sameDeps reports whether a and b order a unit alike: the same after and
// requires.
func sameDeps(a, b *units.Spec) bool {
	return slices.Equal(a.After, b.After) && slices.Equal(a.Requires, b.Requires)
}

// replace switches u to version v, as if newly declared by v's reload:
// once its stop is over, or while it is not active (a stop that failed is
// forgotten).
func (r *Reconciler) replace(u *unit, v version) {
	s := v.spec
	if !sameDeps(u.spec, s) {
		r.reorder()
	}
	u.spec, u.hash, u.epoch, u.stop = s, v.hash, v.epoch, nil
	u.starts, u.attempt, u.err = nil, 0, nil
	// Jobs run on their schedule, not at load; a unit stopped by command
	// stays stopped.
	u.enabled = !s.IsJob() && !u.held
	u.stopTimer(timerBackoff)
	if !u.state.active() {
		u.state = Inactive
	}
}

func ownership(s units.Spec) units.Ownership {
	if s.Ownership == "" {
		return units.Owned
	}
	return s.Ownership
}

func argv(s units.Spec) []string {
	if len(s.Command) > 0 {
		return slices.Clone(s.Command)
	}
	return []string{"/bin/sh", "-c", s.Shell}
}

// env is a unit's environment: the base environment without hermesd's own
// systemd variables, the unit's env, then NOTIFY_SOCKET (notifySocket, when
// not "") and WATCHDOG_USEC.
func (r *Reconciler) env(s units.Spec, notifySocket string, fileEnv []string) []string {
	var env []string
	for _, kv := range r.opt.Env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, fileEnv...) // the user's (see userEnv), the unit's env files, then its env: (later wins in the child)
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		env = append(env, k+"="+s.Env[k])
	}
	if notifySocket != "" {
		env = append(env, "NOTIFY_SOCKET="+notifySocket)
	}
	if w := s.Timeouts.Watchdog; w > 0 {
		env = append(env, "WATCHDOG_USEC="+strconv.FormatInt(w.Microseconds(), 10))
	}
	return env
}

// logOf is u's log file: its latest run's, or the one its next run opens.
func (r *Reconciler) logOf(u *unit) string {
	if u.logPath != "" {
		return u.logPath
	}
	return r.logPath(*u.spec)
}

func (r *Reconciler) logPath(s units.Spec) string {
	if s.Log.Path != "" {
		return s.Log.Path
	}
	return filepath.Join(r.opt.StateDir, "logs", s.Name+".log")
}

func (r *Reconciler) openLog(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	if r.opt.OpenLog != nil {
		return r.opt.OpenLog(path)
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
}

// watchLogs gives Logs the log files of the units that set log.max_size, so
// that it rotates each on the write that crosses it (Run's goroutine):
// the whole set at the first load (logSet); after another, the files of
// the units it changed (watchLog), those of the units it removes having
// been taken out as their removal began (unwatchLog), so that an edit
// among thousands of units costs Logs one file, not the set. A start adds
// its unit's file (start).
func (r *Reconciler) watchLogs(p control.Plan, n news) {
	if r.opt.Logs == nil || r.shut != nil {
		return
	}
	if r.reloads == 1 {
		r.opt.Logs.Watch(r.logSet())
		return
	}
	for _, names := range [][]string{p.Start, p.Restart} {
		for _, name := range names {
			r.watchLog(r.units[name])
		}
	}
	for _, s := range n.kept {
		r.watchLog(r.units[s.Name])
	}
}

// logSet is the set of log files Logs watches: those of the units that set
// log.max_size, a removed unit aside (it is on its way out).
func (r *Reconciler) logSet() map[string]logfile.Limits {
	set := map[string]logfile.Limits{}
	for _, u := range r.units {
		if u.spec.Log.MaxSize <= 0 || u.removed() {
			continue
		}
		set[r.logOf(u)] = logLimits(*u.spec)
	}
	return set
}

// watchLog gives Logs u's log file with its limits as logSet has it (out
// of the set when u sets no log.max_size or is removed).
func (r *Reconciler) watchLog(u *unit) {
	lim := logLimits(*u.spec)
	if u.removed() {
		lim = logfile.Limits{}
	}
	r.opt.Logs.Add(r.logOf(u), lim)
}

// unwatchLog takes u's log file out of Logs' set: u is being removed or
// leaves r.units.
func (r *Reconciler) unwatchLog(u *unit) {
	if r.opt.Logs != nil && r.shut == nil {
		r.opt.Logs.Add(r.logOf(u), logfile.Limits{})
	}
}

// logLimits are the limits of s's log file.
func logLimits(s units.Spec) logfile.Limits {
	return logfile.Limits{MaxSize: int64(s.Log.MaxSize), Keep: s.Log.Keep}
}
