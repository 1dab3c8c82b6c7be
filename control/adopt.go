package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"golang.org/x/sys/unix"

	"github.com/hermes-units/hermes/units"
)

// Ownership transfer (SPEC §8: adopt, adopt --orphans, release). Routes:
//
//	POST /v1/adopt    AdoptRequest   → Adopted
//	POST /v1/orphans  OrphansRequest → OrphanReport
//	POST /v1/units/{unit}/release    → Released
//
// The bodies are a stable contract like Status: fields are added, never
// renamed.
const (
	pathAdopt   = "/v1/adopt"
	pathOrphans = "/v1/orphans"
)

// ErrRefused reports an adopt or release the daemon will not do: an unsafe
// or foreign group, a process that has exited, a group already owned. The
// error's text says which and what to do. It travels across the socket (422).
var ErrRefused = errors.New("refused")

// CodeRefused is the wire code of ErrRefused.
const CodeRefused = "refused"

// Adopter is the ownership-transfer part of a daemon. Every method is safe
// for concurrent use.
type Adopter interface {
	// Adopt makes the daemon own a process group that something else
	// started: it now dies with the daemon. Refusals wrap ErrRefused.
	Adopt(ctx context.Context, req AdoptRequest) (Adopted, error)
	// Orphans lists the leftovers of dead owners found in the ledger, with
	// their evidence; with req.Adopt set it also adopts those that qualify
	// (never a group holding the caller or one of its ancestors).
	Orphans(ctx context.Context, req OrphansRequest) (OrphanReport, error)
	// Release gives a unit's group up: it outlives the daemon and the daemon
	// stops managing it.
	Release(ctx context.Context, unit string) (Released, error)
}

// AdoptRequest is the body of POST /v1/adopt: exactly one of PID (adopt the
// group of PID) and PGID.
type AdoptRequest struct {
	PID  int    `json:"pid,omitempty"`
	PGID int    `json:"pgid,omitempty"`
	As   string `json:"as,omitempty"` // the unit name; "" derives one from the leader's command and the pgid
	// CallerPGID is the process group of the process that asked, which is
	// never adopted (it would kill the asking shell with the daemon). The
	// client sends its own, but the Server replaces it with the group of
	// the peer's pid from SO_PEERCRED: a Backend may trust it.
	CallerPGID int `json:"caller_pgid,omitempty"`
	// CallerPID is the pid of the process that asked, from SO_PEERCRED:
	// the Server sets it, whatever the client sent (0 when unknown). The
	// daemon refuses a group holding one of its ancestors (the shell that
	// ran hermesctl, the terminal's session leader).
	CallerPID int `json:"caller_pid,omitempty"`
}

// Adopted describes a group the daemon now owns.
type Adopted struct {
	Unit    string `json:"unit"`
	PGID    int    `json:"pgid"`
	PID     int    `json:"pid"` // the group's leader (or the member whose identity stands for it)
	Command string `json:"command"`
	Members int    `json:"members"`
}

// OrphansRequest is the body of POST /v1/orphans.
type OrphansRequest struct {
	Adopt bool `json:"adopt"`
	// CallerPGID and CallerPID are the asking process's group and pid, as
	// in AdoptRequest: the Server sets them from SO_PEERCRED, whatever the
	// client sent. A sweep never adopts a group holding the caller or one
	// of its ancestors (a shell left by a dead `hermesctl run`, from which
	// the user asks).
	CallerPGID int `json:"caller_pgid,omitempty"`
	CallerPID  int `json:"caller_pid,omitempty"`
}

// Orphan is a leftover of a dead owner found in the ledger.
type Orphan struct {
	Unit      string          `json:"unit"`
	PID       int             `json:"pid"`
	PGID      int             `json:"pgid"`
	StartTime uint64          `json:"start_time"`
	PPID      int             `json:"ppid"`
	Command   string          `json:"command"`
	Ownership units.Ownership `json:"ownership"`
	Owner     int             `json:"owner_pid"`
	OwnerRole units.Role      `json:"owner_role"`
	Ports     []int           `json:"ports"`
	Evidence  []string        `json:"evidence"` // why this is a leftover, one fact each
	// Adoptable says whether the sweep adopts it; Why says why not.
	Adoptable bool   `json:"adoptable"`
	Why       string `json:"why,omitempty"`
}

// OrphanReport answers POST /v1/orphans.
type OrphanReport struct {
	Orphans []Orphan  `json:"orphans"`
	Adopted []Adopted `json:"adopted"` // empty unless asked to adopt
}

// Released answers POST /v1/units/{unit}/release.
type Released struct {
	Unit string `json:"unit"`
	PGID int    `json:"pgid"`
	PID  int    `json:"pid"`
}

// routeAdopter adds the ownership-transfer routes to mux.
func (s *Server) routeAdopter(mux *router) {
	a := s.b
	post(mux, pathAdopt, "adopt", func(r *http.Request, req AdoptRequest) (Adopted, error) {
		req.CallerPID, req.CallerPGID = caller(r)
		return a.Adopt(r.Context(), req)
	})
	post(mux, pathOrphans, "orphans", func(r *http.Request, req OrphansRequest) (OrphanReport, error) {
		req.CallerPID, req.CallerPGID = caller(r)
		rep, err := a.Orphans(r.Context(), req)
		return normalizeReport(rep), err
	})
	post(mux, pathUnits+"{unit}/release", "release", func(r *http.Request, _ struct{}) (Released, error) {
		return a.Release(r.Context(), r.PathValue("unit"))
	})
}

// decodeBody decodes a small JSON body, one value and nothing after it,
// into v (an empty body leaves v zero); on failure it answers 400 and
// returns false.
func decodeBody(w http.ResponseWriter, r *http.Request, what string, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		writeError(w, fmt.Errorf("%w: %s body: %v", ErrBadRequest, what, err))
		return false
	}
	// One value and nothing after it: trailing data is a client bug, and a
	// second object would be an intent silently dropped.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		writeError(w, fmt.Errorf("%w: %s body: data after the JSON object; send exactly one", ErrBadRequest, what))
		return false
	}
	return true
}

// caller is the pid and process group of the peer that sent r, from
// SO_PEERCRED (0, 0 when unknown): what a client says of itself is never
// trusted.
func caller(r *http.Request) (pid, pgid int) {
	ad, _ := r.Context().Value(connKey{}).(*admission)
	if ad == nil || ad.peer.PID <= 0 {
		return 0, 0
	}
	if pg, err := unix.Getpgid(ad.peer.PID); err == nil {
		pgid = pg
	}
	return ad.peer.PID, pgid
}

func normalizeReport(rep OrphanReport) OrphanReport {
	if rep.Orphans == nil {
		rep.Orphans = []Orphan{}
	}
	if rep.Adopted == nil {
		rep.Adopted = []Adopted{}
	}
	for i := range rep.Orphans {
		if rep.Orphans[i].Ports == nil {
			rep.Orphans[i].Ports = []int{}
		}
		if rep.Orphans[i].Evidence == nil {
			rep.Orphans[i].Evidence = []string{}
		}
	}
	return rep
}

// Adopt asks the daemon to own a group. The client's own process group
// goes along (the daemon checks it against the peer's credentials anyway).
func (c *Client) Adopt(ctx context.Context, req AdoptRequest) (Adopted, error) {
	if (req.PID == 0) == (req.PGID == 0) {
		return Adopted{}, fmt.Errorf("%w: adopt takes a pid or a pgid", ErrBadRequest)
	}
	req.CallerPGID = unix.Getpgrp()
	var res Adopted
	err := c.do(ctx, http.MethodPost, pathAdopt, req, &res)
	return res, err
}

// Orphans lists (and with req.Adopt, adopts) the leftovers of dead
// owners. The daemon fills in the caller from the socket's credentials.
func (c *Client) Orphans(ctx context.Context, req OrphansRequest) (OrphanReport, error) {
	var rep OrphanReport
	if err := c.do(ctx, http.MethodPost, pathOrphans, req, &rep); err != nil {
		return OrphanReport{}, err
	}
	return normalizeReport(rep), nil
}

// Release gives unit's group up.
func (c *Client) Release(ctx context.Context, unit string) (Released, error) {
	return onUnit[Released](ctx, c, http.MethodPost, unit, "release", nil)
}
