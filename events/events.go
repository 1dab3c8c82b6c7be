// Package events is hermesd's record of what happens: unit state changes,
// readiness, restarts, reloads, config errors, adoption and release,
// supervisor restarts, and the provider proxy's cuts and breaker trips.
//
// Publishers (the reconciler's goroutine, the proxy's handlers, the
// supervisor) call Bus.Publish, which never blocks: it stamps the event
// with a sequence number and a time, keeps it in a bounded ring (the recent
// history `hermesctl events` prints), hands it to the Observe hook
// (metrics), and offers it to every subscriber without waiting. A
// subscriber whose buffer is full is dropped: its channel is closed and
// Subscription.Err says it fell behind; the publisher is never held by a
// slow reader.
//
// The JSON of Event is a stable contract (README, "Event schema"): fields
// are added, never renamed or removed; kinds are added, never renamed.
// This package imports nothing of ours but the word table.
package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hermes-units/hermes/internal/word"
)

// Kind says what an event reports. Its text form is the "kind" field of
// the JSON schema.
type Kind int

const (
	// UnitState: a unit's state word (status's STATE column) changed.
	// Unit, State, From, Reason, PID, Restarts.
	UnitState Kind = iota + 1
	// UnitReady: a unit became ready. Unit, PID, Duration (start to ready).
	UnitReady
	// UnitRestart: the restart policy scheduled a restart. Unit,
	// Restarts (count so far), Cause (class), Reason (the error).
	UnitRestart
	// Reload: a reload was applied, or failed to read the units. Plan,
	// Duration, Outcome (applied | failed), Reason (the error when failed).
	Reload
	// ConfigError: a unit file or the config file did not load. Error.
	ConfigError
	// Adopted: a group is now owned by hermesd: re-adopted from the ledger
	// or adopted with `hermesctl adopt`. Unit, PID.
	Adopted
	// Released: a group was given up (`hermesctl release`, or a survivor
	// no longer declared). Unit, PID.
	Released
	// SupervisorRestart: the death supervisor exited and was restarted
	// (or is being retried). PID (the one that exited), Reason.
	SupervisorRestart
	// Cut: a proxy timeout layer cut a call. Provider, Model, Session,
	// Layer, Value, Source, Setting.
	Cut
	// BreakerTrip: a session's give-up breaker opened. Provider, Model,
	// Session, Streak, Threshold.
	BreakerTrip
	// BreakerReset: a tripped breaker closed again (a completed call, a
	// new turn, a model change). Provider, Model, Session, Streak.
	BreakerReset
	// Overflow is the last line of a stream whose reader fell behind by
	// more than its buffer: the events after Seq were not sent. It is
	// never kept in the history. It stays the last kind: UnitState
	// through Overflow are all the kinds.
	Overflow
)

// kindWords names the kinds from UnitState on (the zero Kind names none).
var kindWords = word.Ints[Kind]("Kind", "event kind", "", "unit.state", "unit.ready", "unit.restart", "reload", "config.error",
	"unit.adopted", "unit.released", "supervisor.restart", "proxy.cut", "proxy.breaker_trip", "proxy.breaker_reset", "overflow").Wrap(ErrKind)

// ErrKind reports a kind name this version does not know.
var ErrKind = errors.New("unknown event kind")

func (k Kind) String() string { return kindWords.Name(k) }

// MarshalText implements encoding.TextMarshaler; an unknown kind fails.
func (k Kind) MarshalText() ([]byte, error) { return kindWords.Marshal(k) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *Kind) UnmarshalText(b []byte) error { return kindWords.Unmarshal(k, b) }

// Event is one thing that happened. Which fields a kind fills is said at
// the kind; the others are zero and left out of the JSON.
type Event struct {
	Seq  uint64    `json:"seq"`  // 1, 2, …: per hermesd, without gaps
	Time time.Time `json:"time"` // when it was published
	Kind Kind      `json:"kind"`

	Unit     string `json:"unit,omitempty"`
	State    State  `json:"state,omitempty"` // unit.state: the new state word
	From     State  `json:"from,omitempty"`  // unit.state: the previous one
	Reason   string `json:"reason,omitempty"`
	PID      int    `json:"pid,omitempty"`
	Ready    bool   `json:"ready,omitempty"`
	Restarts int    `json:"restarts,omitempty"`
	// Cause classes a restart's failure (see the Cause* constants).
	Cause    string        `json:"cause,omitempty"`
	Duration time.Duration `json:"duration_ns,omitempty"`
	Outcome  string        `json:"outcome,omitempty"` // reload: applied | failed
	Plan     *Plan         `json:"plan,omitempty"`
	Error    *FileError    `json:"error,omitempty"`

	Provider  string        `json:"provider,omitempty"`
	Model     string        `json:"model,omitempty"`
	Session   string        `json:"session,omitempty"`
	Layer     string        `json:"layer,omitempty"`
	Value     time.Duration `json:"value_ns,omitempty"` // the layer's timeout
	Source    string        `json:"source,omitempty"`   // the chain that produced Value
	Setting   string        `json:"setting,omitempty"`  // the config key to change
	Streak    int           `json:"streak,omitempty"`
	Threshold int           `json:"threshold,omitempty"`
}

// Plan is what a reload did.
type Plan struct {
	Start   []string `json:"start"`
	Stop    []string `json:"stop"`
	Restart []string `json:"restart"`
	Keep    []string `json:"keep"`
}

// FileError is a file that did not load (control.ConfigError in status):
// the message, and where, at file:line:col (Line 0: the file as a whole;
// File "": no file).
type FileError struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Message string `json:"message"`
}

// String formats e as package units formats its errors: "file:line:col:
// message"; "file: message" when the error is about the file as a whole
// (a directory, a dangling symlink, permissions, size); the message alone
// when there is no file.
func (e FileError) String() string {
	switch {
	case e.File == "":
		return e.Message
	case e.Line <= 0:
		return fmt.Sprintf("%s: %s", e.File, e.Message)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Message)
}

// Causes of a restart (Event.Cause), few and fixed, so that a metric can
// count restarts by cause.
const (
	CauseExit         = "exit"          // the program exited (any status)
	CauseSignal       = "signal"        // the program was killed by a signal
	CauseStartTimeout = "start_timeout" // not ready within timeouts.start
	CauseReadiness    = "readiness"     // the readiness probe failed
	CauseWatchdog     = "watchdog"      // no WATCHDOG=1 in time
	CauseRuntimeMax   = "runtime_max"   // ran for its runtime_max
	CauseSpawn        = "spawn"         // could not be started
	CauseBudget       = "budget"        // a job's run budget ran out
	CauseOther        = "other"
)

// Decode parses one JSON line of the schema; unknown kinds fail (a newer
// hermesd than this reader).
func Decode(b []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(b, &e); err != nil {
		return Event{}, err
	}
	return e, nil
}
