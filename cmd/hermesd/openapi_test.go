package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/hermes-units/hermes/control"
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

	doc, err := openapi3.NewLoader().LoadFromFile("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("docs/openapi.yaml is not valid OpenAPI 3: %v", err)
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
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
		req, err := http.NewRequestWithContext(t.Context(), c.method, "http://hermesd"+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", c.method, c.path, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s %s: %v", c.method, c.path, err)
		}
		if resp.StatusCode != c.status {
			t.Errorf("%s %s: status %d %s, want %d", c.method, c.path, resp.StatusCode, body, c.status)
		}
		route, params, err := router.FindRoute(req)
		if err != nil {
			t.Errorf("%s %s: not in docs/openapi.yaml: %v", c.method, c.path, err)
			continue
		}
		ndjson := resp.Header.Get("Content-Type") == "application/x-ndjson"
		in := &openapi3filter.ResponseValidationInput{
			RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
			Status:                 resp.StatusCode,
			Header:                 resp.Header,
			Options:                &openapi3filter.Options{IncludeResponseStatus: true, ExcludeResponseBody: ndjson},
		}
		in.SetBodyBytes(body)
		if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
			t.Errorf("%s %s: answer %d %s does not match docs/openapi.yaml: %v", c.method, c.path, resp.StatusCode, body, err)
		}
		if !ndjson {
			continue
		}
		schema := doc.Components.Schemas["Event"].Value
		n := 0
		for line := range bytes.Lines(body) {
			var v any
			if err := json.Unmarshal(line, &v); err != nil {
				t.Fatalf("%s: line %q: %v", c.path, line, err)
			}
			if err := schema.VisitJSON(v); err != nil {
				t.Errorf("%s: event %s does not match Event: %v", c.path, line, err)
			}
			n++
		}
		if n == 0 {
			t.Errorf("%s: no event, want at least web's start", c.path)
		}
	}
}
