package control

import (
	"context"
	"fmt"
	"syscall"

	"github.com/hermes-units/hermes/internal/word"
	"github.com/hermes-units/hermes/units"
)

// Signalling a running unit (`hermesctl kill`) and asking it to reload
// (`hermesctl reload UNIT`). Routes, served when the Backend is a
// Signaller:
//
//	POST /v1/units/{unit}/kill    KillRequest → ActionResult, once the signal is sent
//	POST /v1/units/{unit}/reload              → ActionResult, once the reload is done
//
// A daemon without them answers with an error of Code CodeNoRoute.

// Whom is which processes of a unit a kill signals.
type Whom string

const (
	WhomAll  Whom = "all"  // every process of the unit's group (its cgroup, or its process group and escapees): systemctl kill's default
	WhomMain Whom = "main" // the main process alone: a forking unit's daemon, else the leader
)

var whomWords = word.Strings("kill target", WhomAll, WhomMain)

// ParseWhom reads "all" or "main".
func ParseWhom(s string) (Whom, error) { return whomWords.Parse(s) }

func (w Whom) MarshalText() ([]byte, error) { return whomWords.Marshal(w) }

func (w *Whom) UnmarshalText(text []byte) error { return whomWords.Unmarshal(w, text) }

// KillRequest is the body of POST /v1/units/{unit}/kill.
type KillRequest struct {
	Signal string `json:"signal"`         // a name (HUP, SIGHUP) or a number, as units.ParseSignal reads it
	Whom   Whom   `json:"whom,omitempty"` // absent: all
}

// Signaller is implemented by a Backend that signals and reloads running
// units. Both methods are safe for concurrent use; an unknown unit is
// ErrUnknownUnit, a unit that is not running ErrConflict.
type Signaller interface {
	// Kill sends sig to whom of the unit and returns once it is sent. It
	// is a signal, not a stop: a unit that dies of it has exited, and its
	// restart policy applies as to any exit.
	Kill(ctx context.Context, unit string, sig syscall.Signal, whom Whom) error
	// ReloadUnit asks the running unit to reload as its file says
	// (reload_signal: to its main process, or the reload: command, waited
	// for), and returns once that is done. A unit whose file has neither
	// is ErrConflict.
	ReloadUnit(ctx context.Context, unit string) error
}

// routeSignaller adds the kill and reload routes to mux when the backend
// has them.
func (s *Server) routeSignaller(mux *router) {
	sg, ok := s.b.(Signaller)
	if !ok {
		return
	}
	routeUnit(mux, "kill", func(ctx context.Context, unit string, req KillRequest) error {
		sig, err := units.ParseSignal(req.Signal)
		if err != nil {
			return fmt.Errorf("%w: kill: %v", ErrBadRequest, err)
		}
		whom := req.Whom
		if whom == "" {
			whom = WhomAll
		}
		return sg.Kill(ctx, unit, syscall.Signal(sig), whom)
	})
	routeBare(mux, "reload", sg.ReloadUnit)
}

var _ Signaller = (*Client)(nil)

// Kill sends sig to whom of unit (see Signaller).
func (c *Client) Kill(ctx context.Context, unit string, sig syscall.Signal, whom Whom) error {
	return c.unitAction(ctx, unit, "kill", KillRequest{Signal: units.Signal(sig).String(), Whom: whom})
}

// ReloadUnit reloads unit (see Signaller) and returns once it is done.
func (c *Client) ReloadUnit(ctx context.Context, unit string) error {
	return c.unitAction(ctx, unit, "reload", struct{}{})
}
