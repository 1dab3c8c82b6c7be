package control

// UnitState is a row's state word in Status (Unit.State): part of the
// stable `status -o json` contract, written and read as the plain word.
// hermesd maps its own states to these at one place (the reconciler's
// status); a client matches the constants, never the text. A client keeps
// a word it does not know as it is: a newer hermesd may add one.
type UnitState string

const (
	StateInactive UnitState = "inactive" // not running and not wanted (or not started yet)
	StateStopped  UnitState = "stopped"  // stopped by command; started again only by command
	StateDisabled UnitState = "disabled" // disabled by command: not started, across restarts of hermesd
	StateStarting UnitState = "starting" // spawned and not ready, or waiting for what it comes after
	StateRunning  UnitState = "running"  // ready, or adopted
	StateStopping UnitState = "stopping" // stop signal sent, its group not empty yet
	StateFailed   UnitState = "failed"   // failed: restarting later (Error says when) or given up
	StateExited   UnitState = "exited"   // exited 0 and not restarted
	StateDone     UnitState = "done"     // a oneshot that exited 0
	StateReleased UnitState = "released" // a released group: nobody's, until adopted
	StateAdopted  UnitState = "adopted"  // a group adopted with `hermesctl adopt`
	StateError    UnitState = "error"    // its unit file did not load, and no good version is kept
)

// UnitStates lists every state word, in the order above.
var UnitStates = []UnitState{StateInactive, StateStopped, StateDisabled, StateStarting, StateRunning,
	StateStopping, StateFailed, StateExited, StateDone, StateReleased, StateAdopted, StateError}
