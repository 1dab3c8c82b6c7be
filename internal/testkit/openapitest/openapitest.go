// Package openapitest checks the answers of a control API server against
// an OpenAPI 3 document (docs/openapi.yaml), for the tests of the server
// and of hermesd: one copy of the request, status and validation steps.
package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// Load reads the document at path, fails the test unless it is valid
// OpenAPI 3, and returns it with a router over its routes.
func Load(t testing.TB, path string) (*openapi3.T, routers.Router) {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromFile(path)
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("%s is not valid OpenAPI 3: %v", path, err)
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return doc, router
}

// Case is a request and the status its answer must have.
type Case struct {
	Method, Path, Body string
	Status             int
}

// Do sends c to the server behind hc (as http://hermesd), fails the test
// when the status is not c.Status, validates the answer against router's
// document (its body too unless noBody), and returns the request, the
// answer and its body.
func Do(t testing.TB, hc *http.Client, router routers.Router, c Case, noBody bool) (*http.Request, *http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), c.Method, "http://hermesd"+c.Path, strings.NewReader(c.Body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", c.Method, c.Path, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%s %s: %v", c.Method, c.Path, err)
	}
	if resp.StatusCode != c.Status {
		t.Errorf("%s %s: status %d %s, want %d", c.Method, c.Path, resp.StatusCode, body, c.Status)
	}
	ValidateAnswer(t, router, req, resp, body, noBody)
	return req, resp, body
}

// ValidateAnswer checks resp (its body too unless noBody) against the
// route of req in router's document.
func ValidateAnswer(t testing.TB, router routers.Router, req *http.Request, resp *http.Response, body []byte, noBody bool) {
	t.Helper()
	route, params, err := router.FindRoute(req)
	if err != nil {
		t.Errorf("%s %s: no route in the OpenAPI document: %v", req.Method, req.URL, err)
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, ExcludeResponseBody: noBody},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("%s %s: answer %d %s does not match the OpenAPI document: %v", req.Method, req.URL, resp.StatusCode, body, err)
	}
}

// ValidateLines checks each JSON line of body against the document's
// schema name, and returns how many lines there were.
func ValidateLines(t testing.TB, doc *openapi3.T, what, name string, body []byte) int {
	t.Helper()
	schema := doc.Components.Schemas[name].Value
	n := 0
	for line := range bytes.Lines(body) {
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			t.Errorf("%s: line %q is not JSON: %v", what, line, err)
			continue
		}
		if err := schema.VisitJSON(v); err != nil {
			t.Errorf("%s: line %s does not match %s: %v", what, line, name, err)
		}
		n++
	}
	return n
}
