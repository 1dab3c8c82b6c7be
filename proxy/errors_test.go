package proxy

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestWriteError: an error travels as data (status, type, code, summary,
// detail, headers) to the one function that writes it; the message is
// the summary, then what to do.
func TestWriteError(t *testing.T) {
	deadline := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		err     error
		status  int
		code    string
		message string
		header  map[string]string
	}{
		{"spent run", budgetSpent("r1", time.Minute, deadline, "", "give the job a larger run_budget_seconds"), http.StatusGone, "run_budget_exceeded",
			`hermes proxy: run "r1": the run's budget is spent (run budget 1m0s, deadline 2026-01-02T03:04:05Z): this call is refused, not timed out; give the job a larger run_budget_seconds`,
			map[string]string{"X-Should-Retry": "false"}},
		{"busy", bodyError(errBodyBusy), http.StatusServiceUnavailable, "bodies_in_flight",
			"hermes proxy: " + errBodyBusy.Error() + ": retry shortly, or raise gateway.max_bodies_in_flight in hermes.yaml",
			map[string]string{"Retry-After": "1", "Connection": ""}},
		{"too large", bodyError(errBodyTooLarge), http.StatusRequestEntityTooLarge, "body_too_large",
			"hermes proxy: " + errBodyTooLarge.Error(), map[string]string{"Connection": "close"}},
		{"not an apiError", errors.New("boom"), http.StatusInternalServerError, "internal", "hermes proxy: boom", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			writeError(rec, tt.err)
			var body errorJSON
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			if rec.Code != tt.status || body.Error.Code != tt.code || body.Error.Message != tt.message {
				t.Errorf("got %d %s %q, want %d %s %q", rec.Code, body.Error.Code, body.Error.Message, tt.status, tt.code, tt.message)
			}
			for k, v := range tt.header {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			var sse strings.Builder
			var ae *apiError
			if errors.As(tt.err, &ae) {
				writeSSEError(&sse, ae)
				if !strings.HasPrefix(sse.String(), "event: error\ndata: ") || !strings.Contains(sse.String(), tt.code) {
					t.Errorf("SSE form %q, want an error event with code %s", sse.String(), tt.code)
				}
			}
		})
	}
}
