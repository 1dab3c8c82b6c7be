package control

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hermes-units/hermes/events"
	"github.com/hermes-units/hermes/internal/diag"
)

// Routes, all under /v1 (a new major version gets a new prefix; fields are
// added to the bodies, never renamed):
//
//	GET  /v1/status[?unit=NAME&unit=…]   → Status
//	POST /v1/units/{unit}/start           → ActionResult
//	POST /v1/units/{unit}/stop            → ActionResult, once the group is empty
//	POST /v1/units/{unit}/restart         → ActionResult
//	POST /v1/reload  ReloadRequest        → Plan
//	GET  /v1/units/{unit}/log             → LogInfo
//	POST /v1/adopt, /v1/orphans, /v1/units/{unit}/release (see adopt.go)
//	POST /v1/units/{unit}/disable, …/enable (see enable.go)
//	POST /v1/units/{unit}/kill, …/reload (see signal.go)
//	POST /v1/units/{unit}/reset-failed (see resetfailed.go)
//	GET  /v1/events[?follow=1]            → JSON lines (see events.go)
//	POST /v1/proxy/rotate-token (see token.go)
//	POST /v1/proxy/runs, held open for a run's life (see runs.go)
//	GET  /v1/version                      → VersionInfo
//	GET  /v1/paths                        → Paths (see paths.go)
//
// Every failure is a non-2xx status with an ErrorBody.
const (
	pathStatus  = "/v1/status"
	pathReload  = "/v1/reload"
	pathUnits   = "/v1/units/"
	pathVersion = "/v1/version"
)

// maxBody bounds a request body; the largest legitimate one is a few bytes.
const maxBody = 64 << 10

// Options tune a Server. The zero value is ready to use.
type Options struct {
	// Logf receives refused connections and the server's own failures;
	// nil discards them.
	Logf func(format string, args ...any)
	// ShutdownTimeout is how long Serve lets in-flight requests finish once
	// its ctx ends, before it cancels their contexts; default 10 s.
	ShutdownTimeout time.Duration
	// Events is served on GET /v1/events (events.go); nil answers that
	// the daemon keeps no event stream.
	Events *events.Bus
	// Version is the daemon's build, served on GET /v1/version.
	Version VersionInfo
	// Paths are the daemon's own directories, served on GET /v1/paths;
	// zero answers that it does not report them.
	Paths Paths
}

// Server serves a Backend on a listener. Every connection's peer is checked
// with SO_PEERCRED: only the daemon's effective uid and root are admitted;
// any other peer gets 403 (ErrDenied) on every request, and the refusal is
// logged once per connection.
type Server struct {
	b     Backend
	logf  func(format string, args ...any)
	grace time.Duration
	uid   int // the uid admitted besides root; os.Geteuid(), changed by tests only
	bus   *events.Bus
	ver   VersionInfo
	paths Paths
}

// NewServer returns a Server for b.
func NewServer(b Backend, opts Options) *Server {
	s := &Server{b: b, logf: opts.Logf, grace: opts.ShutdownTimeout, uid: os.Geteuid(), bus: opts.Events, ver: opts.Version}
	s.paths = opts.Paths
	if s.logf == nil {
		s.logf = func(string, ...any) {}
	}
	if s.grace <= 0 {
		s.grace = 10 * time.Second
	}
	return s
}

// Serve accepts connections on ln (normally from Listen) until ctx ends, then
// stops accepting, lets in-flight requests finish for up to
// Options.ShutdownTimeout, cancels the contexts of those still running, and
// returns once every connection's goroutine has ended. It closes ln. It
// returns nil when ctx ended, or the error that stopped the listener.
//
// Requests run under a context that does not end with ctx (so that a stop in
// progress is not cut short by the daemon's own shutdown) but ends when the
// client goes away or the shutdown bound expires; Backend methods must
// return when it does.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	base, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	// conns joins the goroutine of every connection: Add runs in the
	// accept loop (StateNew), so all Adds happen before hs.Serve returns.
	var conns sync.WaitGroup
	// Event streams end as soon as shutdown begins: they never finish on
	// their own, and would hold it for the whole grace.
	streams := make(chan struct{})
	var endStreams sync.Once
	hs := &http.Server{
		Handler:           s.handler(streams),
		BaseContext:       func(net.Listener) context.Context { return base },
		ConnContext:       s.admit,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(logWriter(s.logf), "control: ", 0),
		ConnState: func(_ net.Conn, st http.ConnState) {
			switch st {
			case http.StateNew:
				conns.Add(1)
			case http.StateClosed, http.StateHijacked:
				conns.Done()
			}
		},
	}
	hs.RegisterOnShutdown(func() { endStreams.Do(func() { close(streams) }) })
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	var err error
	select {
	case err = <-served:
		err = fmt.Errorf("control: serve: %w", err)
		cancel()
		hs.Close()
	case <-ctx.Done():
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), s.grace)
		if serr := hs.Shutdown(sctx); serr != nil {
			s.logf("control: requests still running %v after shutdown began; cancelling them", s.grace)
			cancel()
			hs.Close()
		}
		scancel()
		<-served // http.ErrServerClosed
	}
	conns.Wait()
	return err
}

type connKey struct{}

// admission is the verdict on one connection, made once when it is accepted.
type admission struct {
	peer peer
	err  error // nil: admitted; else an ErrDenied error to answer every request with
}

// admit is http.Server.ConnContext: it runs in the accept loop.
func (s *Server) admit(ctx context.Context, c net.Conn) context.Context {
	a := &admission{}
	p, err := peerOf(c)
	switch {
	case err != nil:
		s.logf("control: refused a connection: cannot read its peer's credentials: %v", err)
		a.err = fmt.Errorf("%w: hermesd could not check who you are (%v)", ErrDenied, err)
	case !admitted(p.UID, s.uid):
		s.logf("control: refused a connection from pid %d uid %d: only uid %d and root may steer hermesd", p.PID, p.UID, s.uid)
		a.err = &refusal{
			msg:  fmt.Sprintf("permission denied: uid %d may not steer this hermesd (it runs as uid %d; only that user and root may)", p.UID, s.uid),
			kind: ErrDenied,
		}
	}
	a.peer = p
	return context.WithValue(ctx, connKey{}, a)
}

// router is a ServeMux that remembers the patterns it was given, so that
// the routes served can be listed (and checked against docs/openapi.yaml).
type router struct {
	*http.ServeMux
	patterns []string
}

func (m *router) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.patterns = append(m.patterns, pattern)
	m.ServeMux.HandleFunc(pattern, h)
}

// routes returns the mux of the API and the "METHOD /path" patterns of its
// routes; end closes when shutdown begins. The catch-all that answers
// CodeNoRoute is not among the patterns.
func (s *Server) routes(end <-chan struct{}) (*router, []string) {
	mux := &router{ServeMux: http.NewServeMux()}
	mux.HandleFunc("GET "+pathStatus, s.status)
	mux.HandleFunc("GET "+pathEvents, s.events(end))
	mux.HandleFunc("GET "+pathVersion, func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, s.ver) })
	for _, a := range []Action{ActionStart, ActionStop, ActionRestart} {
		post(mux, pathUnits+"{unit}/"+string(a), string(a), func(r *http.Request, _ struct{}) (ActionResult, error) {
			return s.act(r.Context(), r.PathValue("unit"), a)
		})
	}
	post(mux, pathReload, "reload", func(r *http.Request, req ReloadRequest) (Plan, error) {
		// Unknown fields are refused (a newer client's intent is not
		// silently ignored), and so is anything after the object.
		plan, err := s.b.Reload(r.Context(), req.DryRun)
		return normalizePlan(plan), err
	})
	mux.HandleFunc("GET "+pathUnits+"{unit}/log", s.logPath)
	s.routeAdopter(mux)
	s.routeEnabler(mux)
	s.routeMasker(mux)
	s.routeSignaller(mux)
	s.routeResetter(mux)
	s.routeTokens(mux)
	s.routeRuns(mux, end)
	s.routeKeeper(mux)
	s.routePaths(mux)
	patterns := slices.Clone(mux.patterns)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeBody(w, http.StatusNotFound, newErrorBody(&diag.Error{
			What: fmt.Sprintf("hermesd does not serve %s %s", r.Method, r.URL.Path),
			Fix:  "are hermesctl and hermesd the same version?",
		}, CodeNoRoute))
	})
	return mux, patterns
}

// handler routes the API; end closes when shutdown begins.
func (s *Server) handler(end <-chan struct{}) http.Handler {
	mux, _ := s.routes(end)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a, _ := r.Context().Value(connKey{}).(*admission); a == nil || a.err != nil {
			w.Header().Set("Connection", "close")
			err := error(&refusal{msg: "permission denied", kind: ErrDenied})
			if a != nil {
				err = a.err
			}
			writeError(w, err)
			return
		}
		// ServeMux answers an unclean path ("/v1/units//stop", a unit
		// named "." or "..") with a redirect and an HTML body; every answer
		// of this API is JSON, and no client of ours sends such a path on
		// purpose.
		if p := r.URL.Path; p != path.Clean(p) {
			writeError(w, fmt.Errorf("%w: path %q is not canonical: is the unit name empty, \".\" or \"..\"?", ErrBadRequest, p))
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// act does a to unit: through Act when the Backend is an Actor, else
// through its Start, Stop or Restart.
func (s *Server) act(ctx context.Context, unit string, a Action) (ActionResult, error) {
	if ac, ok := s.b.(Actor); ok {
		res, err := ac.Act(ctx, unit, a)
		res.Unit, res.Action = unit, string(a)
		return res, err
	}
	do := map[Action]func(context.Context, string) error{ActionStart: s.b.Start, ActionStop: s.b.Stop, ActionRestart: s.b.Restart}[a]
	if do == nil {
		return ActionResult{}, fmt.Errorf("%w: unknown action %q", ErrBadRequest, a)
	}
	return ActionResult{Unit: unit, Action: string(a)}, do(ctx, unit)
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	st, err := s.b.Status(r.Context(), r.URL.Query()["unit"]...)
	reply(w, normalize(st), err)
}

func (s *Server) logPath(w http.ResponseWriter, r *http.Request) {
	unit := r.PathValue("unit")
	p, err := s.b.LogPath(r.Context(), unit)
	reply(w, LogInfo{Unit: unit, Path: p}, err)
}

// normalize turns nil slices into empty ones: the contract says arrays.
func normalize(st Status) Status {
	if st.Units == nil {
		st.Units = []Unit{}
	}
	if st.ConfigErrors == nil {
		st.ConfigErrors = []ConfigError{}
	}
	return st
}

func normalizePlan(p Plan) Plan {
	for _, l := range []*[]string{&p.Start, &p.Stop, &p.Restart, &p.Keep} {
		if *l == nil {
			*l = []string{}
		}
	}
	if p.Errors == nil {
		p.Errors = []ConfigError{}
	}
	return p
}

func writeError(w http.ResponseWriter, err error) {
	code, status := encodeError(err)
	writeBody(w, status, newErrorBody(err, code))
}

func writeJSON(w http.ResponseWriter, v any) { writeBody(w, http.StatusOK, v) }

// reply answers with err when there is one, else with v.
func reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, v)
}

// post adds the route POST path to mux: do answers a request, its body
// read strictly into a Req (decodeBody, what naming the body in its
// error; a Req of struct{} is a route that takes no body, and it is not
// read), with its error or its Res.
func post[Req, Res any](mux *router, path, what string, do func(r *http.Request, req Req) (Res, error)) {
	mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if _, none := any(req).(struct{}); !none && !decodeBody(w, r, what, &req) {
			return
		}
		res, err := do(r, req)
		reply(w, res, err)
	})
}

// routeUnit adds the route POST /v1/units/{unit}/action to mux: do acts on
// the unit the path names, with the body as post reads it, and the answer
// is its error or ActionResult{unit, action}.
func routeUnit[Req any](mux *router, action string, do func(ctx context.Context, unit string, req Req) error) {
	post(mux, pathUnits+"{unit}/"+action, action, func(r *http.Request, req Req) (ActionResult, error) {
		unit := r.PathValue("unit")
		return ActionResult{Unit: unit, Action: action}, do(r.Context(), unit, req)
	})
}

// routeBare adds the route POST /v1/units/{unit}/action, which takes no
// body, to mux: do acts on the unit.
func routeBare(mux *router, action string, do func(ctx context.Context, unit string) error) {
	routeUnit(mux, action, func(ctx context.Context, unit string, _ struct{}) error { return do(ctx, unit) })
}

// bodies are the buffers answers are encoded in.
var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// writeBody answers with status and v in JSON, encoded whole before it is
// written: the answer says its Content-Length and goes out in one write
// (a status of 1000 units is some 360 kB), so that the client reads it
// into a buffer of its size. A v that does not encode is an internal
// error.
func writeBody(w http.ResponseWriter, status int, v any) {
	b := bodies.Get().(*bytes.Buffer)
	defer func() {
		if b.Cap() <= 4<<20 { // an answer of thousands of units is kept for the next
			b.Reset()
			bodies.Put(b)
		}
	}()
	b.Reset()
	if err := json.NewEncoder(b).Encode(v); err != nil {
		b.Reset()
		status = http.StatusInternalServerError
		_ = json.NewEncoder(b).Encode(newErrorBody(fmt.Errorf("hermesd cannot encode its answer: %w", err), CodeInternal))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(status)
	// A failure here means the client went away; there is no one left to
	// tell.
	_, _ = w.Write(b.Bytes())
}

// logWriter adapts Logf to the io.Writer that http.Server's ErrorLog needs.
type logWriter func(format string, args ...any)

func (f logWriter) Write(p []byte) (int, error) {
	f("%s", string(p))
	return len(p), nil
}
