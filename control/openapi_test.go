package control

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/events"
	"github.com/hermes-units/hermes/internal/testkit/openapitest"
	"github.com/hermes-units/hermes/units"
)

// The control API's document, docs/openapi.yaml, is checked here: it is
// valid OpenAPI 3, it lists exactly the routes a Server registers, and the
// answers of a Server on a socket validate against it.

const openAPIFile = "../docs/openapi.yaml"

// fullBackend is a fakeBackend with every optional part of a Backend, so
// that the Server registers every route it has.
type fullBackend struct{ *fakeBackend }

var (
	_ Enabler         = fullBackend{}
	_ Masker          = fullBackend{}
	_ Keeper          = fullBackend{}
	_ TokenRotator    = fullBackend{}
	_ RunRegistrar    = fullBackend{}
	_ Signaller       = fullBackend{}
	_ FailureResetter = fullBackend{}
)

func (fullBackend) ResetFailed(context.Context, string) error { return nil }

func (fullBackend) Kill(context.Context, string, syscall.Signal, Whom) error { return nil }
func (fullBackend) ReloadUnit(context.Context, string) error                 { return nil }

func (fullBackend) Disable(context.Context, string) error      { return nil }
func (fullBackend) Enable(context.Context, string, bool) error { return nil }

func (fullBackend) Mask(context.Context, string, bool) error { return nil }
func (fullBackend) Unmask(context.Context, string) error     { return nil }

var keptSince = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func (fullBackend) Own(_ context.Context, req OwnRequest) (OwnedGroups, error) {
	var g OwnedGroups
	for _, pg := range req.PGIDs {
		g.Groups = append(g.Groups, OwnedGroup{Name: "agent", PGID: pg, PID: pg, Command: "python3 agent.py", Owner: 7, Ownership: units.Owned, Since: keptSince, State: "kept"})
	}
	return g, nil
}

func (fullBackend) ReleaseGroups(context.Context, ReleaseRequest) (OwnedGroups, error) {
	return OwnedGroups{}, nil // nil Groups: the server must answer []
}

func (fullBackend) RotateProxyToken(context.Context) (TokenRotation, error) {
	return TokenRotation{File: "/s/proxy.token", OldValidUntil: keptSince}, nil
}

func (fullBackend) RegisterRun(_ context.Context, req RunRequest) (RunRegistration, func(), error) {
	return RunRegistration{ID: "r1", BaseURL: "http://127.0.0.1:1/run/r1/v1", Deadline: keptSince.Add(req.Budget)}, func() {}, nil
}

func (fullBackend) EndRun(context.Context, string) (bool, error) { return true, nil }

func (fullBackend) Orphans(context.Context, OrphansRequest) (OrphanReport, error) {
	// nil Ports and Evidence: the server must answer [].
	return OrphanReport{Orphans: []Orphan{{Unit: "old", PID: 9, PGID: 9, StartTime: 123, PPID: 1, Command: "sleep", Ownership: "owned", Owner: 3, OwnerRole: "gateway"}}}, nil
}

// TestOpenAPIRoutes: every route a Server registers is in
// docs/openapi.yaml, and every route there is served: a new route without
// its document fails here.
func TestOpenAPIRoutes(t *testing.T) {
	doc, _ := openapitest.Load(t, openAPIFile)
	var documented []string
	for p, item := range doc.Paths.Map() {
		for m := range item.Operations() {
			documented = append(documented, m+" "+p)
		}
	}
	srv := NewServer(fullBackend{&fakeBackend{}}, Options{})
	_, served := srv.routes(nil)
	slices.Sort(documented)
	served = slices.Sorted(slices.Values(served))
	if len(served) < 18 {
		t.Errorf("the server lists %d routes: %q; is the route list incomplete?", len(served), served)
	}
	for _, r := range served {
		if !slices.Contains(documented, r) {
			t.Errorf("route %q is served but not in %s", r, openAPIFile)
		}
	}
	for _, r := range documented {
		if !slices.Contains(served, r) {
			t.Errorf("route %q is in %s but not served", r, openAPIFile)
		}
	}
}

// TestOpenAPIEventKinds: the document's Event kinds are the kinds the
// daemon publishes.
func TestOpenAPIEventKinds(t *testing.T) {
	doc, _ := openapitest.Load(t, openAPIFile)
	var documented, kinds []string
	for _, v := range doc.Components.Schemas["Event"].Value.Properties["kind"].Value.Enum {
		documented = append(documented, v.(string))
	}
	for k := events.UnitState; k <= events.Overflow; k++ {
		kinds = append(kinds, k.String())
	}
	if !slices.Equal(documented, kinds) {
		t.Errorf("%s lists the event kinds %q, the daemon publishes %q", openAPIFile, documented, kinds)
	}
}

// socketClient is a plain HTTP client of the control socket at path, as curl
// --unix-socket is.
func socketClient(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
}

// TestOpenAPIAnswers validates the answers of a Server on a socket, for
// each route and the main errors, against docs/openapi.yaml.
func TestOpenAPIAnswers(t *testing.T) {
	doc, router := openapitest.Load(t, openAPIFile)
	st := sampleStatus()
	st.Units[0].Job = &Job{Schedule: "@every 1h", Next: keptSince, RunID: "r0"}
	st.Units[0].Timeouts = &Timeouts{Start: time.Second, Stop: 2 * time.Second}
	st.Proxy = &Proxy{Listen: "127.0.0.1:8787", Breakers: []Breaker{{Session: "s", Provider: "p", Model: "m", Threshold: 3}}}
	st.Recovery = &Recovery{Leftovers: 1}
	st.Owned = []OwnedGroup{{Name: "agent", PGID: 5, PID: 5, Owner: 7, Ownership: units.Owned, Since: keptSince, State: "kept"}}
	bus := events.New(events.Options{})
	bus.Publish(events.Event{Kind: events.UnitState, Unit: "web", State: "running", From: "starting", PID: 100})
	bus.Publish(events.Event{Kind: events.Reload, Outcome: "applied", Plan: &events.Plan{Start: []string{"web"}}})
	bus.Publish(events.Event{Kind: events.ConfigError, Error: &events.FileError{File: "/u/bad.yaml", Line: 3, Message: "bad"}})
	bus.Publish(events.Event{Kind: events.Cut, Provider: "p", Layer: "stale_stream", Value: time.Second})
	b := fullBackend{&fakeBackend{status: st, plan: Plan{Start: []string{"web"}}, logs: map[string]string{"web": "/s/logs/web.log"}}}
	srv := NewServer(b, Options{
		Events:  bus,
		Version: VersionInfo{Version: "(devel)", Go: "go1.26"},
		Paths:   Paths{Config: "/c/hermes.yaml", Units: "/c/units", State: "/s", Socket: "/s/hermesd.sock", Logs: "/s/logs"},
	})
	s := serve(t, srv)
	hc := socketClient(s.path)
	defer hc.CloseIdleConnections()

	for _, c := range []struct {
		method, path, body string
		status             int
	}{
		{"GET", "/v1/status", "", 200},
		{"GET", "/v1/status?unit=web&unit=job", "", 200},
		{"POST", "/v1/units/web/start", "", 200},
		{"POST", "/v1/units/web/stop", "", 200},
		{"POST", "/v1/units/web/restart", "", 200},
		{"POST", "/v1/units/web/disable", "", 200},
		{"POST", "/v1/units/web/enable", `{"start":true}`, 200},
		{"POST", "/v1/units/web/mask", `{"now":true}`, 200},
		{"POST", "/v1/units/web/unmask", "", 200},
		{"POST", "/v1/units/web/release", "", 200},
		{"POST", "/v1/units/web/kill", `{"signal":"HUP","whom":"main"}`, 200},
		{"POST", "/v1/units/web/kill", `{"signal":"NOPE"}`, 400},
		{"POST", "/v1/units/web/kill", `{"signal":"HUP","whom":"some"}`, 400},
		{"POST", "/v1/units/web/reload", "", 200},
		{"POST", "/v1/units/web/reset-failed", "", 200},
		{"GET", "/v1/units/web/log", "", 200},
		{"GET", "/v1/units/nope/log", "", 404},
		{"POST", "/v1/reload", `{"dry_run":true}`, 200},
		{"POST", "/v1/reload", `{"dry_run":true,"what":1}`, 400},
		{"POST", "/v1/adopt", `{"pid":123,"as":"x"}`, 200},
		{"POST", "/v1/orphans", `{}`, 200},
		{"POST", "/v1/owned/own", `{"pgids":[5]}`, 200},
		{"POST", "/v1/owned/release", `{"pgids":[5]}`, 200},
		{"POST", "/v1/proxy/rotate-token", "", 200},
		{"POST", "/v1/proxy/runs", `{"budget_ns":0}`, 400},
		{"GET", "/v1/version", "", 200},
		{"GET", "/v1/paths", "", 200},
	} {
		openapitest.Do(t, hc, router, openapitest.Case{Method: c.method, Path: c.path, Body: c.body, Status: c.status}, false)
	}

	// A path the daemon does not serve: an ErrorBody with code no_route.
	resp, err := hc.Get("http://hermesd/v1/nothing")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("GET /v1/nothing: status %d, want 404", resp.StatusCode)
	}
	openapitest.ValidateLines(t, doc, "GET /v1/nothing", "ErrorBody", body)
	var eb ErrorBody
	if err := json.Unmarshal(body, &eb); err != nil || eb.Summary != "hermesd does not serve GET /v1/nothing" || eb.Detail == "" {
		t.Errorf("GET /v1/nothing: got %+v (%v), want the summary and a detail apart", eb, err)
	}

	// The event history: headers by the document, each line an Event.
	req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://hermesd/v1/events", nil)
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	openapitest.ValidateAnswer(t, router, req, resp, nil, true)
	if n := openapitest.ValidateLines(t, doc, "GET /v1/events", "Event", body); n != 4 {
		t.Errorf("GET /v1/events: %d lines, want the 4 published: %s", n, body)
	}

	// Open-ended answers: the followed stream and a registered run are
	// checked on their headers and first lines, then closed.
	for _, c := range []struct{ method, path, body, schema string }{
		{"GET", "/v1/events?follow=1", "", "Event"},
		{"POST", "/v1/proxy/runs", `{"budget_ns":60000000000,"wrapup":"wrap up"}`, "RunRegistration"},
		{"DELETE", "/v1/proxy/runs/r1", "", "RunEnded"},
	} {
		ctx, cancel := context.WithCancel(t.Context())
		req, _ := http.NewRequestWithContext(ctx, c.method, "http://hermesd"+c.path, strings.NewReader(c.body))
		resp, err := hc.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("%s %s: %v", c.method, c.path, err)
		}
		openapitest.ValidateAnswer(t, router, req, resp, nil, true)
		line, err := bufio.NewReader(resp.Body).ReadBytes('\n')
		if err != nil {
			t.Errorf("%s %s: first line: %v", c.method, c.path, err)
		}
		openapitest.ValidateLines(t, doc, c.method+" "+c.path, c.schema, line)
		cancel()
		resp.Body.Close()
	}
}
