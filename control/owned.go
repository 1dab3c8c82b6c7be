package control

import (
	"context"
	"net/http"
	"time"

	"github.com/hermes-units/hermes/units"
)

// Groups kept for a control owner: any local process of the daemon's user
// (an agent in Python or Node, through clients/python and clients/node)
// hands process groups to the daemon, the keeper, which owns them for it:
// they die with that owner (watched through its exit file, no polling),
// and with the daemon (its death supervisor ends them as it ends units).
// Routes, served when the Backend is a Keeper:
//
//	POST /v1/owned/own      OwnRequest     → OwnedGroups (those now kept)
//	POST /v1/owned/release  ReleaseRequest → OwnedGroups (those released)
//
// Spawn owned is a client's gate and own: the client starts its child as
// the leader of a new session blocked on a pipe it holds, owns the group,
// then lets the child exec its program; a child whose caller dies before
// the own reads EOF on the gate and exits without running its program.
// The bodies are a stable contract like Status: fields are added, never
// renamed.
const (
	pathOwn     = "/v1/owned/own"
	pathRelease = "/v1/owned/release"
)

// Keeper is implemented by a Backend that keeps groups for control owners.
// Refusals wrap ErrRefused and change nothing.
type Keeper interface {
	// Own keeps req's groups for req's owner: all or none.
	Own(ctx context.Context, req OwnRequest) (OwnedGroups, error)
	// ReleaseGroups gives req's groups up: they outlive their owner and the
	// daemon (with OnceEmpty: they stay kept until nothing is left in them).
	ReleaseGroups(ctx context.Context, req ReleaseRequest) (OwnedGroups, error)
}

// OwnRequest is the body of POST /v1/owned/own.
type OwnRequest struct {
	PGIDs []int `json:"pgids"`
	// Owner is the pid whose death ends the groups; 0: the caller.
	Owner int `json:"owner_pid,omitempty"`
	// Ownership is units.Owned (the default, ""): the groups are stopped
	// (TERM, the grace, KILL) at the death of their owner, and die with the
	// daemon; or units.PersistOnRelease, which needs a Reason: they are made
	// to survive, recorded with their reason, shown in status, never
	// stopped by the daemon nor its supervisor.
	Ownership units.Ownership `json:"ownership,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	Name      string          `json:"name,omitempty"` // shown in status; "" derives one from the leader's command
	// CallerPID is the pid of the process that asked, from SO_PEERCRED:
	// the Server sets it, whatever the client sent.
	CallerPID int `json:"caller_pid,omitempty"`
}

// ReleaseRequest is the body of POST /v1/owned/release.
type ReleaseRequest struct {
	PGIDs     []int `json:"pgids"`
	OnceEmpty bool  `json:"once_empty,omitempty"`
	CallerPID int   `json:"caller_pid,omitempty"` // set by the Server, as in OwnRequest
}

// OwnedGroup is one group kept for a control owner.
type OwnedGroup struct {
	Name      string          `json:"name"`
	PGID      int             `json:"pgid"`
	PID       int             `json:"pid"` // the leader
	Command   string          `json:"command"`
	Owner     int             `json:"owner_pid"`
	Ownership units.Ownership `json:"ownership"`
	Reason    string          `json:"reason,omitempty"`
	Since     time.Time       `json:"since"`
	State     OwnedState      `json:"state"`
}

// OwnedGroups answers the routes.
type OwnedGroups struct {
	Groups []OwnedGroup `json:"groups"`
}

// routeKeeper adds the routes of kept groups to mux when the backend has
// them.
func (s *Server) routeKeeper(mux *router) {
	k, ok := s.b.(Keeper)
	if !ok {
		return
	}
	post(mux, pathOwn, "own", func(r *http.Request, req OwnRequest) (OwnedGroups, error) {
		req.CallerPID, _ = caller(r)
		res, err := k.Own(r.Context(), req)
		return normalizeOwned(res), err
	})
	post(mux, pathRelease, "release", func(r *http.Request, req ReleaseRequest) (OwnedGroups, error) {
		req.CallerPID, _ = caller(r)
		res, err := k.ReleaseGroups(r.Context(), req)
		return normalizeOwned(res), err
	})
}

func normalizeOwned(g OwnedGroups) OwnedGroups {
	if g.Groups == nil {
		g.Groups = []OwnedGroup{}
	}
	return g
}

var _ Keeper = (*Client)(nil)

// Own asks the daemon to keep groups for an owner (see Keeper).
func (c *Client) Own(ctx context.Context, req OwnRequest) (OwnedGroups, error) {
	var res OwnedGroups
	err := c.do(ctx, http.MethodPost, pathOwn, req, &res)
	return normalizeOwned(res), err
}

// ReleaseGroups asks the daemon to give kept groups up (see Keeper).
func (c *Client) ReleaseGroups(ctx context.Context, req ReleaseRequest) (OwnedGroups, error) {
	var res OwnedGroups
	err := c.do(ctx, http.MethodPost, pathRelease, req, &res)
	return normalizeOwned(res), err
}
