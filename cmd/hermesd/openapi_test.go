package main

import (
	"context"
	"net"
	"net/http"
	"testing"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit/openapitest"
)

// TestOpenAPILive validates the answers of a real hermesd, running a unit,
// against docs/openapi.yaml: status, a unit's log, actions and errors on an
// unknown unit, the event history, version and paths. (control's
// TestOpenAPIRoutes checks that the document lists every route.)
func TestOpenAPILive(t *testing.T) {
	d, dir := startEmpty(t)
	writeUnits(t, dir, map[string]string{"web": "owned"})
	if _, err := d.client().Reload(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	d.waitUnit("web", "running", func(u control.Unit) bool { return u.State == "running" })

	doc, router := openapitest.Load(t, "../../docs/openapi.yaml")
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "unix", d.socket)
	}}}
	defer hc.CloseIdleConnections()

	for _, c := range []struct {
		method, path, body string
		status             int
	}{
		{"GET", "/v1/status", "", 200},
		{"GET", "/v1/status?unit=web", "", 200},
		{"GET", "/v1/status?unit=nope", "", 404},
		{"GET", "/v1/units/web/log", "", 200},
		{"GET", "/v1/units/nope/log", "", 404},
		{"POST", "/v1/units/nope/start", "", 404},
		{"POST", "/v1/units/web/restart", "", 200},
		{"POST", "/v1/reload", `{"dry_run":true}`, 200},
		{"POST", "/v1/orphans", `{}`, 200},
		{"POST", "/v1/owned/release", `{"pgids":[]}`, 200},
		{"GET", "/v1/events", "", 200},
		{"GET", "/v1/version", "", 200},
		{"GET", "/v1/paths", "", 200},
	} {
		ndjson := c.path == "/v1/events"
		_, _, body := openapitest.Do(t, hc, router, openapitest.Case{Method: c.method, Path: c.path, Body: c.body, Status: c.status}, ndjson)
		if ndjson && openapitest.ValidateLines(t, doc, c.path, "Event", body) == 0 {
			t.Errorf("%s: no event, want at least web's start", c.path)
		}
	}
}
