package control

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// fuzzRoutes are the routes a fuzzed request goes to; {unit} is replaced by
// the fuzzed unit name. decode is the body type a route decodes, nil when it
// reads no body.
var fuzzRoutes = []struct {
	method, path string
	decode       func() any
}{
	{"POST", pathReload, func() any { return new(ReloadRequest) }},
	{"POST", pathAdopt, func() any { return new(AdoptRequest) }},
	{"POST", pathOrphans, func() any { return new(OrphansRequest) }},
	{"POST", pathUnits + "{unit}/start", nil},
	{"POST", pathUnits + "{unit}/stop", nil},
	{"POST", pathUnits + "{unit}/restart", nil},
	{"POST", pathUnits + "{unit}/release", nil},
	{"GET", pathUnits + "{unit}/log", nil},
	{"GET", pathStatus, nil},
	{"PUT", pathReload, nil},
}

var wireCodes = []string{CodeUnknownUnit, CodeConflict, CodeDenied, CodeBadRequest, CodeTimeout, CodeNoRoute, CodeInternal, CodeRefused}

// FuzzServer feeds arbitrary request bodies (and unit names) to the
// server's handler, as an admitted peer. It must never panic; every answer
// is JSON; every failure is an ErrorBody with a message and a known code;
// and a route that decodes a body accepts it exactly when it is empty or
// one JSON value of the route's type with no unknown field and nothing
// after it; otherwise it answers 400 bad_request without calling the
// backend. Run longer with
// go test -run '^$' -fuzz FuzzServer -fuzztime 60s ./control
func FuzzServer(f *testing.F) {
	for _, s := range []struct {
		route byte
		unit  string
		body  string
	}{
		{0, "", `{"dry_run":true}`},
		{0, "", ``},
		{0, "", `   `},
		{0, "", `null`},
		{0, "", `{"dry_run":"yes"}`},
		{0, "", `{"dry_run":true,"force":true}`},
		{0, "", `{"dry_run":true} trailing`},
		{0, "", `{"dry_run":true}{"dry_run":false}`},
		{0, "", `[1,2,3]`},
		{0, "", `{"dry_run":tru`},
		{1, "", `{"pid":1234,"as":"web"}`},
		{1, "", `{"pgid":-1}`},
		{1, "", `{"pid":1e99}`},
		{1, "", `{"caller_pgid":1}`},
		{2, "", `{"adopt":true}`},
		{3, "web", ``},
		{4, "../../etc", `{}`},
		{6, "web%2Fx", ``},
		{7, "caf\xe9", ``},
		{8, "", `{}`},
		{9, "", `{}`},
	} {
		f.Add(s.route, s.unit, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, route byte, unit string, body []byte) {
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		b := &fakeBackend{logs: map[string]string{unit: "/tmp/x.log"}}
		srv := NewServer(b, Options{})
		path := strings.ReplaceAll(rt.path, "{unit}", url.PathEscape(unit))
		ctx := context.WithValue(t.Context(), connKey{}, &admission{})
		req := (&http.Request{
			Method: rt.method, URL: &url.URL{Path: path}, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Content-Type": {"application/json"}}, Host: "hermesd",
			Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
		}).WithContext(ctx)
		rec := httptest.NewRecorder()
		srv.handler(nil).ServeHTTP(rec, req)

		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s %s: Content-Type %q, want application/json; body %q", rt.method, path, ct, rec.Body.Bytes())
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %s: answer is not JSON: %q", rt.method, path, rec.Body.Bytes())
		}
		if rec.Code >= 300 {
			var eb ErrorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || eb.Error == "" || !slices.Contains(wireCodes, eb.Code) {
				t.Fatalf("%s %s: status %d with body %q, want an ErrorBody with a message and a known code", rt.method, path, rec.Code, rec.Body.Bytes())
			}
		}
		if rt.decode == nil {
			return
		}
		ok := acceptable(body, rt.decode())
		switch {
		case ok && rec.Code != http.StatusOK:
			t.Fatalf("%s %s with body %q: status %d %q, want 200", rt.method, path, body, rec.Code, rec.Body.Bytes())
		case !ok && rec.Code != http.StatusBadRequest:
			t.Fatalf("%s %s with body %q: status %d %q, want 400 bad_request", rt.method, path, body, rec.Code, rec.Body.Bytes())
		case !ok && len(b.calls.All()) > 0:
			t.Fatalf("%s %s with body %q: the backend was called (%v) with a refused body", rt.method, path, body, b.calls.All())
		}
	})
}

// acceptable is the reference reading of a request body: empty (or only
// white space), or exactly one JSON value that decodes into v with no
// unknown field, within the size bound.
func acceptable(body []byte, v any) bool {
	if len(bytes.TrimLeft(body, " \t\r\n")) == 0 {
		return len(body) <= maxBody
	}
	if len(body) > maxBody || !json.Valid(body) {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	return dec.Decode(v) == nil
}
