package control

import "context"

// Masking and unmasking units (`hermesctl mask`, `unmask`). Routes, served
// when the Backend is a Masker:
//
//	POST /v1/units/{unit}/mask    MaskRequest → ActionResult (with now: once the group is empty)
//	POST /v1/units/{unit}/unmask              → ActionResult
//
// A daemon without them answers with an error of Code CodeNoRoute.

// Masker is implemented by a Backend whose daemon masks units. Both
// methods are safe for concurrent use; an unknown unit is ErrUnknownUnit,
// a unit that cannot be masked (an adopted group with no unit file)
// ErrConflict.
type Masker interface {
	// Mask marks the unit so that nothing starts it until Unmask: Start,
	// Restart and Enable of it, and Start or Restart of a unit that
	// requires it, are refused (ErrConflict, the error naming the masked
	// unit and `hermesctl unmask`); its schedule does not fire and a
	// reload leaves it stopped. The mark outlives restarts of the daemon
	// and reboots. A running unit runs on, as after `systemctl mask`;
	// with now it is also stopped, and Mask returns once its group is
	// empty, as Stop does.
	Mask(ctx context.Context, unit string, now bool) error
	// Unmask undoes Mask; unmasking a unit that is not masked changes
	// nothing. The unit is not started: one not running stays stopped
	// until Start, within the boot. A disabled unit stays disabled.
	Unmask(ctx context.Context, unit string) error
}

// MaskRequest is the body of POST /v1/units/{unit}/mask.
type MaskRequest struct {
	Now bool `json:"now"` // stop the unit too, as POST …/stop does
}

// routeMasker adds the mask and unmask routes to mux when the backend has
// them.
func (s *Server) routeMasker(mux *router) {
	if m, ok := s.b.(Masker); ok {
		routeUnit(mux, "mask", func(ctx context.Context, unit string, req MaskRequest) error {
			return m.Mask(ctx, unit, req.Now)
		})
		routeBare(mux, "unmask", m.Unmask)
	}
}

var _ Masker = (*Client)(nil)

// Mask masks unit, and with now stops it (see Masker).
func (c *Client) Mask(ctx context.Context, unit string, now bool) error {
	return c.unitAction(ctx, unit, "mask", MaskRequest{Now: now})
}

// Unmask unmasks unit (see Masker).
func (c *Client) Unmask(ctx context.Context, unit string) error {
	return c.unitAction(ctx, unit, "unmask", struct{}{})
}
