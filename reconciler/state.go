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

// timerKind names a unit timer.
type timerKind int

const (
	timerBackoff timerKind = iota
	timerStart
	timerRuntime
	timerWatchdog
)

// unit is one unit's state. Every field is owned by the Run goroutine.
type unit struct {
	spec     units.Spec
	hash     string
	state    State
	enabled  bool   // wanted running: declared and not stopped by command
	gen      uint64 // the current run or stop; events with another gen are stale
	proc     Process
	group    supervisor.Group
	adopted  bool
	external bool // adopted with `hermesctl adopt`: no unit file, nothing to restart
	ready    bool
	started  time.Time
	logPath  string
	// notifySock is the run's own NOTIFY_SOCKET (Options.NotifySockets),
	// from openNotify before the spawn until closeNotify after the run.
	notifySock string

	restarts int         // automatic restarts so far
	attempt  int         // consecutive failed runs, for the backoff
	starts   []time.Time // starts inside the start-limit window
	err      error       // the last error, shown in status; nil when none
	waitMsg  string      // why a Waiting unit waits

	cancel context.CancelFunc // ends the run's probes and exit watcher
	runCtx context.Context    // the run's context, ended by cancel

	// Daemons (daemon.go), reset at each start.
	main     proc.Identity // forking: the daemon's main process, once found
	mainPGID int           // forking: main's process group (it may have left the launcher's)
	launched bool          // forking: the launcher exited 0
	probed   bool          // forking: the probe passed before the main process was found
	left     int           // simple: the processes its leader left at its exit 0 (daemonized)
	timers   map[timerKind]*time.Timer

	// listener (tcp probe, reset at each start): the listener the probe
	// reaches is held by a process outside the unit (listenerCheck).
	listener *ListenerError

	// epoch is the reload (Reconciler.reloads) that produced spec: a start
	// waits for the stops of that reload and earlier ones (blocked).
	epoch uint64

	stopWhy   stopReason
	cause     error          // stopFailure: what failed
	pending   *units.Spec    // stopReload: the spec to switch to
	pendHash  string         // pending's hash
	pendEpoch uint64         // the reload that produced pending
	removed   bool           // stopReload: forget the unit once stopped
	stopEpoch uint64         // pending or removed: the reload that began the stop
	waiters   []chan<- error // Stop callers waiting for the group to be empty

	// declared (external units only): the unit file of the same name,
	// which waits for the adopted group to be gone, then starts as a unit
	// of reload declEpoch. nil when no file declares the name.
	declared  *units.Spec
	declEpoch uint64
	// takenBy: the pgid of a released group that was adopted under this
	// unit's name; the unit waits while it is listed as released.
	takenBy int

	// held: stopped by `hermesctl stop` or `disable` (holds.go). Reloads
	// still switch the unit to its file's new version, but do not start
	// it; Start (or Restart) clears it. A unit removed and declared again
	// is new: not held, unless disabled.
	held bool
}

func (u *unit) stopTimer(k timerKind) {
	if t := u.timers[k]; t != nil {
		t.Stop()
		delete(u.timers, k)
	}
}

// endRun stops the run's timers (backoff excepted) and probes.
func (u *unit) endRun() {
	for _, k := range []timerKind{timerStart, timerRuntime, timerWatchdog} {
		u.stopTimer(k)
	}
	if u.cancel != nil {
		u.cancel()
		u.cancel = nil
	}
}

func (u *unit) replyWaiters(err error) {
	for _, w := range u.waiters {
		w <- err
	}
	u.waiters = nil
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
