package events

// State is a unit's state word: status's STATE column (control.Unit.State,
// whose control.UnitState is this type) and the State and From of a
// unit.state event. It is part of the stable `status -o json` and event
// contracts, written and read as the plain word. hermesd maps its own
// states to these at one place (the reconciler's status); a client matches
// the constants, never the text. A client keeps a word it does not know as
// it is: a newer hermesd may add one.
type State string

const (
	StateInactive State = "inactive" // not running and not wanted (or not started yet)
	StateStopped  State = "stopped"  // stopped by command; started again only by command
	StateDisabled State = "disabled" // disabled by command: not started, across restarts of hermesd
	StateStarting State = "starting" // spawned and not ready, or waiting for what it comes after
	StateRunning  State = "running"  // ready, or adopted
	StateStopping State = "stopping" // stop signal sent, its group not empty yet
	StateFailed   State = "failed"   // failed: restarting later (Error says when) or given up
	StateExited   State = "exited"   // exited 0 and not restarted
	StateDone     State = "done"     // a oneshot that exited 0
	StateReleased State = "released" // a released group: nobody's, until adopted
	StateAdopted  State = "adopted"  // a group adopted with `hermesctl adopt`
	StateError    State = "error"    // its unit file did not load, and no good version is kept
)

// States lists every state word, in the order above.
var States = []State{StateInactive, StateStopped, StateDisabled, StateStarting, StateRunning,
	StateStopping, StateFailed, StateExited, StateDone, StateReleased, StateAdopted, StateError}
