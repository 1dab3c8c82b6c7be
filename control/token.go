package control

import (
	"context"
	"net/http"
	"time"
)

// The provider proxy's token (`hermesctl proxy rotate-token`). Route, served
// when the Backend is a TokenRotator:
//
//	POST /v1/proxy/rotate-token → TokenRotation
const pathRotateToken = "/v1/proxy/rotate-token"

// TokenRotator is implemented by a Backend whose daemon owns the provider
// proxy's token.
type TokenRotator interface {
	// RotateProxyToken replaces the proxy token with a fresh one, in its
	// file and in the running proxy.
	RotateProxyToken(ctx context.Context) (TokenRotation, error)
}

// TokenRotation answers POST /v1/proxy/rotate-token. The token itself never
// travels: it is read from File by its owner.
type TokenRotation struct {
	File string `json:"file"` // where the new token is
	// OldValidUntil is when the replaced token stops being honoured; zero
	// when it no longer is (the proxy is off). A restart of hermesd ends
	// the grace too.
	OldValidUntil time.Time `json:"old_valid_until,omitzero"`
}

// routeTokens adds the token route to mux when the backend has one.
func (s *Server) routeTokens(mux *router) {
	tr, ok := s.b.(TokenRotator)
	if !ok {
		return
	}
	mux.HandleFunc("POST "+pathRotateToken, func(w http.ResponseWriter, r *http.Request) {
		res, err := tr.RotateProxyToken(r.Context())
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, res)
	})
}

// RotateProxyToken asks the daemon for a new proxy token (see TokenRotator).
// A daemon without the route answers with an error of Code CodeNoRoute.
func (c *Client) RotateProxyToken(ctx context.Context) (TokenRotation, error) {
	var res TokenRotation
	err := c.do(ctx, http.MethodPost, pathRotateToken, struct{}{}, &res)
	return res, err
}
