package control

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Ad-hoc runs with a budget (`hermesctl run --run-budget`). Route, served
// when the Backend is a RunRegistrar:
//
//	POST   /v1/proxy/runs       RunRequest → one JSON line, RunRegistration,
//	                                         then nothing until the run ends
//	DELETE /v1/proxy/runs/{id}  → RunEnded, once the run's calls are cut
//
// The run stays registered with the provider proxy for as long as the
// request is open: the client ends it by closing the connection (by any
// death of the client too, kill -9 included), and the daemon ends it when
// it shuts down, which ends the answer. Closing returns before the daemon
// has seen it; a client that must know the run's calls are over before it
// acts (`hermesctl run` at its deadline, before the TERM) ends it with
// DELETE, which answers once they are. A daemon without the route answers
// with an error of Code CodeNoRoute; one with the proxy off with
// ErrConflict.
const pathRuns = "/v1/proxy/runs"

// RunRegistrar is implemented by a Backend whose daemon serves the
// provider proxy.
type RunRegistrar interface {
	// RegisterRun registers a run of req.Budget with the provider proxy,
	// as a job's run is: its calls, through RunRegistration.BaseURL or
	// with the run id in header X-Hermes-Run-Id, are resolved with the
	// budget's remaining time, get req.WrapUp once after 80 % of it, and
	// are refused once it is spent. It returns the registration and
	// release, which unregisters the run (cutting its calls in flight);
	// release is called exactly once. The proxy off is an error wrapping
	// ErrConflict.
	RegisterRun(ctx context.Context, req RunRequest) (RunRegistration, func(), error)
	// EndRun unregisters the run id, as its release does, and returns
	// once its calls in flight are cut. ended is false when the run was
	// not registered (ended already, or never known): not an error.
	EndRun(ctx context.Context, id string) (ended bool, err error)
}

// RunEnded is the answer to DELETE /v1/proxy/runs/{id}.
type RunEnded struct {
	ID    string `json:"run_id"`
	Ended bool   `json:"ended"` // false: it was not registered
}

// RunRequest is the body of POST /v1/proxy/runs.
type RunRequest struct {
	Budget time.Duration `json:"budget_ns"` // positive
	// Spent is how much of Budget the client's clock of the run had used
	// when it sent the request: the proxy's clock starts that far in, so
	// that both come to the wrap-up and the deadline together (the
	// proxy's a transit time later, never earlier).
	Spent time.Duration `json:"spent_ns,omitempty"`
	// WrapUp is the notice the proxy injects into the run's first model
	// request after 80 % of Budget; "" injects none.
	WrapUp string `json:"wrapup,omitempty"`
}

// RunRegistration is the first line of the answer to POST /v1/proxy/runs.
type RunRegistration struct {
	ID string `json:"run_id"` // for HERMES_RUN_ID and X-Hermes-Run-Id
	// BaseURL is the run's OPENAI_BASE_URL: http://LISTEN/run/ID/v1.
	BaseURL  string    `json:"base_url"`
	Deadline time.Time `json:"deadline"` // when the proxy's budget is spent
}

// routeRuns adds the run route to mux when the backend has it; end closes
// when the server shuts down.
func (s *Server) routeRuns(mux *router, end <-chan struct{}) {
	rr, ok := s.b.(RunRegistrar)
	if !ok {
		return
	}
	mux.HandleFunc("POST "+pathRuns, func(w http.ResponseWriter, r *http.Request) {
		var req RunRequest
		if !decodeBody(w, r, "run", &req) {
			return
		}
		if req.Budget <= 0 || req.Spent < 0 || req.Spent >= req.Budget {
			writeError(w, fmt.Errorf("%w: run budget %v with %v spent: give a positive budget, and less than it spent", ErrBadRequest, req.Budget, req.Spent))
			return
		}
		reg, release, err := rr.RegisterRun(r.Context(), req)
		if err != nil {
			writeError(w, err)
			return
		}
		defer release()
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		_ = json.NewEncoder(w).Encode(reg)
		if http.NewResponseController(w).Flush() != nil {
			return
		}
		select {
		case <-r.Context().Done():
		case <-end:
		}
	})
	mux.HandleFunc("DELETE "+pathRuns+"/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		ended, err := rr.EndRun(r.Context(), id)
		reply(w, RunEnded{ID: id, Ended: ended}, err)
	})
}

var _ RunRegistrar = (*Client)(nil)

// EndRun ends the run id (see RunRegistrar) and returns once the daemon
// has cut its calls.
func (c *Client) EndRun(ctx context.Context, id string) (bool, error) {
	if id == "" {
		return false, fmt.Errorf("%w: empty run id", ErrBadRequest)
	}
	var res RunEnded
	err := c.do(ctx, http.MethodDelete, pathRuns+"/"+url.PathEscape(id), nil, &res)
	return res.Ended, err
}

// RegisterRun registers a run with the daemon's provider proxy (see
// RunRegistrar). The run stays registered until release is called or ctx
// ends; release closes the request's connection and returns without
// waiting for the daemon to see it.
func (c *Client) RegisterRun(ctx context.Context, req RunRequest) (RunRegistration, func(), error) {
	b, err := json.Marshal(req)
	if err != nil {
		return RunRegistration{}, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://hermesd"+pathRuns, bytes.NewReader(b))
	if err != nil {
		cancel()
		return RunRegistration{}, nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(hreq)
	if err != nil {
		cancel()
		if ctxErr := ctx.Err(); ctxErr != nil {
			return RunRegistration{}, nil, ctxErr
		}
		return RunRegistration{}, nil, dialError(c.path, err)
	}
	release := func() {
		cancel()
		resp.Body.Close()
	}
	if resp.StatusCode/100 != 2 {
		defer release()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return RunRegistration{}, nil, answerError(resp, data, fmt.Sprintf("hermesd answered %s: %s", resp.Status, bytes.TrimSpace(data)))
	}
	line, err := bufio.NewReaderSize(io.LimitReader(resp.Body, 64<<10), 4096).ReadBytes('\n')
	var reg RunRegistration
	if err == nil {
		err = json.Unmarshal(line, &reg)
	}
	if err == nil && reg.ID == "" {
		err = errors.New("no run id")
	}
	if err != nil {
		release()
		return RunRegistration{}, nil, fmt.Errorf("hermesd's answer to POST %s is not what this hermesctl understands (%v); are they the same version?", pathRuns, err)
	}
	return reg, release, nil
}
