package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// apiError is an error as a client of the proxy gets it: what happened
// (summary) apart from what to do about it (detail, empty when the
// summary says it all), the HTTP status, and the OpenAI error type and
// code an SDK matches on. The steps of a call return one; writeError and
// writeSSEError alone write it.
type apiError struct {
	status          int
	typ, code       string
	summary, detail string
	header          []string // pairs of name, value set on the answer
}

func newError(status int, typ, code, summary, detail string) *apiError {
	return &apiError{status: status, typ: typ, code: code, summary: summary, detail: detail}
}

// badRequest is a 400 or 404 of the request itself (invalid_request_error).
func badRequest(status int, code, summary, detail string) *apiError {
	return newError(status, "invalid_request_error", code, summary, detail)
}

func (e *apiError) Error() string {
	if e.detail == "" {
		return e.summary
	}
	return e.summary + ": " + e.detail
}

// with sets a header on the answer.
func (e *apiError) with(name, value string) *apiError {
	e.header = append(e.header, name, value)
	return e
}

// final tells an SDK not to retry: the same call meets the same refusal.
func (e *apiError) final() *apiError { return e.with("X-Should-Retry", "false") }

// closing ends the connection after the answer: the request's body was
// not read to its end.
func (e *apiError) closing() *apiError { return e.with("Connection", "close") }

// body is e as the OpenAI-style error object.
func (e *apiError) body() errorJSON {
	return errorJSON{errorFields{"hermes proxy: " + e.Error(), e.typ, e.code}}
}

type errorJSON struct {
	Error errorFields `json:"error"`
}

type errorFields struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    string `json:"code"`
}

// writeError writes err as the response, before anything else was written:
// an *apiError as it says, any other error as a 500 server_error.
func writeError(w http.ResponseWriter, err error) {
	var e *apiError
	if !errors.As(err, &e) {
		e = newError(http.StatusInternalServerError, "server_error", "internal", err.Error(), "")
	}
	for i := 0; i+1 < len(e.header); i += 2 {
		w.Header().Set(e.header[i], e.header[i+1])
	}
	writeJSON(w, e.status, e.body())
}

// writeSSEError writes e as an "error" event of a stream whose headers went
// out; it follows whole pieces, so it starts a fresh event.
func writeSSEError(w io.Writer, e *apiError) {
	b, _ := json.Marshal(e.body())
	fmt.Fprintf(w, "event: error\ndata: %s\n\n", b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
