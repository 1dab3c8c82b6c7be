package control

import "context"

// Clearing a unit's failure (`hermesctl reset-failed`). Route, served when
// the Backend is a FailureResetter:
//
//	POST /v1/units/{unit}/reset-failed → ActionResult
//
// A daemon without it answers with an error of Code CodeNoRoute.

// FailureResetter is implemented by a Backend that can forget a unit's
// failure. ResetFailed is safe for concurrent use; an unknown unit is
// ErrUnknownUnit.
type FailureResetter interface {
	// ResetFailed makes a failed unit (or one backing off towards a
	// restart) inactive, its error, restart count and start-limit
	// history forgotten, as systemctl reset-failed does; it is not
	// started. A unit that is not failed is left as it is.
	ResetFailed(ctx context.Context, unit string) error
}

// routeResetter adds the reset-failed route to mux when the backend has it.
func (s *Server) routeResetter(mux *router) {
	if rf, ok := s.b.(FailureResetter); ok {
		routeBare(mux, "reset-failed", rf.ResetFailed)
	}
}

var _ FailureResetter = (*Client)(nil)

// ResetFailed clears unit's failure (see FailureResetter).
func (c *Client) ResetFailed(ctx context.Context, unit string) error {
	return c.unitAction(ctx, unit, "reset-failed", struct{}{})
}
