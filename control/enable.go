package control

import "context"

// Disabling and enabling units (`hermesctl disable`, `enable`). Routes,
// served when the Backend is an Enabler:
//
//	POST /v1/units/{unit}/disable                → ActionResult, once the group is empty
//	POST /v1/units/{unit}/enable  EnableRequest  → ActionResult
//
// A daemon without them answers with an error of Code CodeNoRoute.

// Enabler is implemented by a Backend whose daemon keeps units disabled.
// Both methods are safe for concurrent use; an unknown unit is
// ErrUnknownUnit, a unit that cannot be disabled (an adopted group with no
// unit file) ErrConflict.
type Enabler interface {
	// Disable stops the unit and returns once its group is empty (or ctx
	// ends), as Stop does; the unit then stays stopped until Enable,
	// across reloads, edits of its file, restarts of the daemon and
	// reboots. Start and Restart of a disabled unit are refused
	// (ErrConflict).
	Disable(ctx context.Context, unit string) error
	// Enable undoes Disable; enabling a unit that is not disabled changes
	// nothing. With start the unit is started as by Start (a job is not
	// run: it fires on its schedule again), and the start's error is
	// returned; without, it stays stopped as after Stop: until Start,
	// within the boot.
	Enable(ctx context.Context, unit string, start bool) error
}

// EnableRequest is the body of POST /v1/units/{unit}/enable.
type EnableRequest struct {
	Start bool `json:"start"` // start the unit too, as POST …/start does
}

// routeEnabler adds the disable and enable routes to mux when the backend
// has them.
func (s *Server) routeEnabler(mux *router) {
	if en, ok := s.b.(Enabler); ok {
		routeBare(mux, "disable", en.Disable)
		routeUnit(mux, "enable", func(ctx context.Context, unit string, req EnableRequest) error {
			return en.Enable(ctx, unit, req.Start)
		})
	}
}

var _ Enabler = (*Client)(nil)

// Disable disables unit (see Enabler) and returns once its group is empty.
func (c *Client) Disable(ctx context.Context, unit string) error {
	return c.unitAction(ctx, unit, "disable", struct{}{})
}

// Enable enables unit, and with start starts it (see Enabler).
func (c *Client) Enable(ctx context.Context, unit string, start bool) error {
	return c.unitAction(ctx, unit, "enable", EnableRequest{Start: start})
}
