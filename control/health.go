package control

import (
	"strings"

	"github.com/hermes-units/hermes/internal/word"
)

// HealthState is the death supervisor's health in one word.
type HealthState string

const (
	HealthOK            HealthState = "ok"
	HealthIdle          HealthState = "idle"           // no supervisor needed: nothing is registered
	HealthFailing       HealthState = "failing"        // it exits at once; retried with backoff
	HealthStopped       HealthState = "stopped"        // it is stopped (SIGSTOP) and reads nothing
	HealthNotResponding HealthState = "not responding" // a line unanswered for more than a second
	HealthDegraded      HealthState = "degraded"       // a registration nobody waited for was refused
)

var healthWords = word.Strings("supervisor health", "", HealthOK, HealthIdle, HealthFailing, HealthStopped, HealthNotResponding, HealthDegraded)

// Health is the death supervisor's health: its state and, unless it is ok
// or idle, the reason. On the wire it is one string, the state, then ": "
// and the reason when there is one ("failing: supervisor 12 exited …");
// a state this build does not know is refused when read.
type Health struct {
	State  HealthState
	Reason string
}

// ParseHealth reads a health as the wire, and the supervisor's report of
// it (supervisor.Status.Health), write it. A state it does not know is an
// error, and is kept in the Health as it reads.
func ParseHealth(s string) (Health, error) {
	st, reason, _ := strings.Cut(s, ": ")
	_, err := healthWords.Parse(st)
	return Health{HealthState(st), reason}, err
}

// Well reports whether the supervisor does its work: ok, idle, or not said.
func (h Health) Well() bool { return h.State == HealthOK || h.State == HealthIdle || h.State == "" }

func (h Health) String() string {
	if h.Reason == "" {
		return string(h.State)
	}
	return string(h.State) + ": " + h.Reason
}

func (h Health) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText reads text with ParseHealth; h is left as it was when
// text is refused.
func (h *Health) UnmarshalText(text []byte) error {
	v, err := ParseHealth(string(text))
	if err == nil {
		*h = v
	}
	return err
}
