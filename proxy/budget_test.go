package proxy

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/hermes-units/hermes/timeouts"
)

// countAttempts is an SDK middleware that counts the requests the client
// sends (its retries included) and keeps the last response's headers.
func countAttempts(n *atomic.Int32, last *atomic.Pointer[http.Header]) option.Middleware {
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		n.Add(1)
		res, err := next(req)
		if res != nil {
			h := res.Header.Clone()
			last.Store(&h)
		}
		return res, err
	}
}

// TestRunBudgetSpent: a run whose budget is spent gets the budget error at
// once, not a call capped at 60 s: the provider is not called and the SDK,
// with its default retries, does not try again.
func TestRunBudgetSpent(t *testing.T) {
	h := newHarness(t, setup{})
	h.up.play(hang)
	budget := timeouts.NewBudget(time.Millisecond, nil)
	t.Cleanup(budget.Stop)
	<-budget.Done()
	h.proxy.RegisterRun("spent", budget, "")
	var attempts atomic.Int32
	var last atomic.Pointer[http.Header]
	c := openai.NewClient(option.WithBaseURL(h.url+"/run/spent/v1/"), option.WithAPIKey(testToken), option.WithHTTPClient(h.hc),
		option.WithMaxRetryDelay(time.Millisecond), option.WithMiddleware(countAttempts(&attempts, &last)))
	for _, streaming := range []bool{false, true} {
		attempts.Store(0)
		var err error
		if streaming {
			_, err = stream(t, c, "gpt-4o")
		} else {
			_, err = c.Chat.Completions.New(t.Context(), chatParams("gpt-4o"))
		}
		var api *openai.Error
		if !errors.As(err, &api) || api.StatusCode != http.StatusGone || api.Code != timeouts.BudgetErrorCode || api.Type != "hermes_budget_error" {
			t.Fatalf("stream=%v: got %v, want 410 %s", streaming, err, timeouts.BudgetErrorCode)
		}
		says(t, api.Message, `run "spent"`, "the run's budget is spent", "refused, not timed out", "run_budget_seconds")
		if got := attempts.Load(); got != 1 {
			t.Errorf("stream=%v: the SDK sent %d requests, want 1 (no retry of a spent run)", streaming, got)
		}
		if got := (*last.Load()).Get("X-Should-Retry"); got != "false" {
			t.Errorf("X-Should-Retry = %q, want false", got)
		}
	}
	if n := h.up.calls.Load(); n != 0 {
		t.Errorf("the provider got %d calls, want 0", n)
	}
	if st := h.proxy.Status(); len(st) != 0 {
		t.Errorf("got breaker status %+v, want no session: a refused call is no strike", st)
	}
}
