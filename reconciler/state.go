package reconciler

import (
	"context"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
)

// State is where a unit is in its life, as the reconciler's goroutine sees it.
type State int

const (
	Inactive   State = iota // not running and not wanted, or not yet started
	Waiting                 // wanted, waiting for an after/requires unit
	Starting                // spawned, not ready yet
	Running                 // ready (or adopted)
	Stopping                // stop signal sent, waiting for the group to be empty
	BackingOff              // failed, a restart is scheduled
	Failed                  // failed, no restart (policy, start limit, port held)
	Exited                  // exited with status 0, not restarted
	Done                    // a oneshot that exited 0: its after: dependents may start
)

// word is the state's word in status and events, the one place a State
// becomes a control.UnitState: waiting shows as starting, backoff as
// failed (the error says when the restart comes). Status says more of an
// inactive unit (stateWord).
func (s State) word() control.UnitState {
	switch s {
	case Inactive:
		return control.StateInactive
	case Waiting, Starting:
		return control.StateStarting
	case Running:
		return control.StateRunning
	case Stopping:
		return control.StateStopping
	case BackingOff, Failed:
		return control.StateFailed
	case Exited:
		return control.StateExited
	case Done:
		return control.StateDone
	}
	return "unknown"
}

// String is the state's word (word), for logs.
func (s State) String() string { return string(s.word()) }

// active reports whether a group may exist for a unit in this state.
func (s State) active() bool { return s == Starting || s == Running || s == Stopping }

// stopReason says why a stop was started, and so what follows once the group
// is empty.
type stopReason int

const (
	stopCommand  stopReason = iota // hermesctl stop: inactive, not wanted
	stopRestart                    // hermesctl restart: start again
	stopReload                     // reload: switch to the pending spec, or remove
	stopRequires                   // a required unit went down: wait for it
	stopShutdown                   // hermesd is stopping
	stopFailure                    // exit, start timeout, watchdog, runtime max: restart policy
)

// timerKind names a unit timer. The backoff comes last: a run's timers
// are those before it (run.timers).
type timerKind int

const (
	timerStart timerKind = iota
	timerRuntime
	timerWatchdog
	timerBackoff
)

// unit is one unit's state. Every field is owned by Run's goroutine. What
// exists only during one phase of the unit lives in that phase's value:
// run while a group of the unit runs, stop while it is being stopped.
type unit struct {
	spec     *units.Spec // shared with the load that gave it (Loaded): nobody modifies it
	hash     string
	state    State
	enabled  bool   // wanted running: declared and not stopped by command
	gen      uint64 // the current run or stop; events with another gen are stale
	external bool   // adopted with `hermesctl adopt`: no unit file, nothing to restart
	logPath  string // the log file of the latest run; "" before the first

	restarts int         // automatic restarts so far
	attempt  int         // consecutive failed runs, for the backoff
	starts   []time.Time // starts inside the start-limit window
	err      error       // the last error, shown in status; nil when none
	waitMsg  string      // why a Waiting unit waits
	backoff  *time.Timer // armed while BackingOff

	// run is the unit's group while it runs: set when it is spawned or
	// adopted (state Starting or Running), dropped once its group is
	// empty or released; nil otherwise. A stop that failed leaves it:
	// the group may still have processes.
	run *run

	// epoch is the reload (Reconciler.reloads) that produced spec: a start
	// waits for the stops of that reload and earlier ones (blocked).
	epoch uint64

	// stop is the unit's stop: set when it begins (state Stopping),
	// dropped once the group is empty; nil otherwise. A stop that failed
	// stays, as its run does, and the next stop takes it over (stop).
	stop *stopping

	// declared (external units only): the unit file of the same name,
	// which waits for the adopted group to be gone, then starts as a new
	// unit. nil when no file declares the name.
	declared *version
	// takenBy: the pgid of a released group that was adopted under this
	// unit's name; the unit waits while it is listed as released.
	takenBy int

	// leader is the latest run's leader, our child, kept once the run
	// has ended for its exit status (exitStatus); nil before the first
	// run, for an adopted run (its leader is not our child) and for a
	// forking unit that launched its daemon (the launcher's exit 0 says
	// nothing of the unit).
	leader Process

	// held: stopped by `hermesctl stop` or `disable` (holds.go). Reloads
	// still switch the unit to its file's new version, but do not start
	// it; Start (or Restart) clears it. A unit removed and declared again
	// is new: not held, unless disabled.
	held bool

	// pub is what publishChanges last reported of the unit.
	pub seen
}

// version is a version of a unit's file that it is to switch to: the
// spec, its hash, and the reload (Reconciler.reloads) that produced it.
type version struct {
	spec  *units.Spec
	hash  string
	epoch uint64
}

// stopping is a unit's stop, from its stop signal until its group is
// empty: why it was begun, and so what follows (stopped). Owned by Run's
// goroutine.
type stopping struct {
	why     stopReason
	cause   error          // stopFailure: what failed
	next    *version       // stopReload: the version to switch to; nil when none
	removed bool           // stopReload: forget the unit once stopped
	epoch   uint64         // next or removed: the reload that began the stop
	waiters []chan<- error // callers waiting for the group to be empty
}

// forReload reports whether s is a reload's stop: to a new version, or of
// a removed unit. nil-safe.
func (s *stopping) forReload() bool { return s != nil && (s.removed || s.next != nil) }

// join makes a caller one of the stop's waiters: its outcome arrives on
// the channel returned.
func (s *stopping) join() <-chan error {
	w := make(chan error, 1)
	s.waiters = append(s.waiters, w)
	return w
}

// reply tells the stop's waiters how it ended. nil-safe.
func (s *stopping) reply(err error) {
	if s == nil {
		return
	}
	for _, w := range s.waiters {
		w <- err
	}
	s.waiters = nil
}

// removed reports whether u is being stopped to be forgotten: its file is
// gone.
func (u *unit) removed() bool { return u.stop != nil && u.stop.removed }

// run is one run of a unit: its group, from the spawn (or the adoption)
// until the group is empty (or released). Owned by Run's goroutine; the
// goroutines that watch the run get copies of what they need, and end
// with ctx.
type run struct {
	proc       Process // the leader, our child; nil for an adopted group (its leader is not our child)
	group      supervisor.Group
	started    time.Time
	notifySock string             // the run's NOTIFY_SOCKET (openNotify); "" when none
	output     *copying           // the copy of its output into its log (logOutput); nil when it writes the file itself, or it is adopted
	ctx        context.Context    // ends with the run: its probes and watchers
	cancel     context.CancelFunc // ends ctx
	timers     [timerBackoff]*time.Timer

	// Daemons (daemon.go).
	main     proc.Identity // forking: the daemon's main process, once found
	mainPGID int           // forking: main's process group (it may have left the launcher's)
	launched bool          // forking: the launcher exited 0
	probed   bool          // forking: the probe passed before the main process was found
	left     int           // simple: the processes its leader left at its exit 0 (daemonized)

	// listener (tcp probe): the listener the probe reaches is held by a
	// process outside the unit (listenerCheck).
	listener *ListenerError
}

// newRun is a run of the group g led by p (nil: an adopted group), begun
// at now; its context ends with it (end).
func (r *Reconciler) newRun(p Process, g supervisor.Group, now time.Time) *run {
	ctx, cancel := context.WithCancel(r.base)
	return &run{proc: p, group: g, started: now, ctx: ctx, cancel: cancel}
}

// end stops the run's timers and ends its context, which wakes its
// watchers. nil-safe.
func (rn *run) end() {
	if rn != nil {
		rn.stopTimers()
		rn.cancel()
	}
}

func (rn *run) stopTimers() {
	for i := range rn.timers {
		stopTimer(&rn.timers[i])
	}
}

// uptimeOf is the age of the process id as of the clock reading c (the
// age from its kernel start time: a survivor re-adopted by this hermesd
// counts from its own start, not from its adoption), or the time since
// started when its age cannot be had (an identity without a pid).
func uptimeOf(id proc.Identity, started time.Time, c proc.AgeClock) time.Duration {
	if age, err := id.AgeAt(c); err == nil {
		return age
	}
	return time.Since(started)
}

// adopted reports whether u runs a group it did not spawn (re-adopted, or
// adopted by command): its leader is not our child.
func (u *unit) adopted() bool { return u.run != nil && u.run.proc == nil }

// timer is where u's timer k is kept: the backoff on u (it runs between
// runs), the others on its run.
func (u *unit) timer(k timerKind) **time.Timer {
	if k == timerBackoff {
		return &u.backoff
	}
	return &u.run.timers[k]
}

func (u *unit) stopTimer(k timerKind) { stopTimer(u.timer(k)) }

func stopTimer(t **time.Timer) {
	if *t != nil {
		(*t).Stop()
		*t = nil
	}
}

// keeps reports whether a unit's group outlives a clean stop of its owner:
// survivors under a gateway, persist_on_release under any owner (SPEC §3).
func keeps(role units.Role, o units.Ownership) bool {
	switch o {
	case units.PersistOnRelease:
		return true
	case units.Adoptable:
		return role == units.RoleGateway
	}
	return false
}
