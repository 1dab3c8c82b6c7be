package control

import "github.com/hermes-units/hermes/events"

// UnitState is a row's state word in Status (Unit.State), the word of a
// unit.state event: see events.State.
type UnitState = events.State

// The state words (events.State's).
const (
	StateInactive = events.StateInactive
	StateStopped  = events.StateStopped
	StateDisabled = events.StateDisabled
	StateStarting = events.StateStarting
	StateRunning  = events.StateRunning
	StateStopping = events.StateStopping
	StateFailed   = events.StateFailed
	StateExited   = events.StateExited
	StateDone     = events.StateDone
	StateReleased = events.StateReleased
	StateAdopted  = events.StateAdopted
	StateError    = events.StateError
)
