package proxy

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/hermes-units/hermes/timeouts"
)

// TestRunDeadlineCutsCalls: at a run's deadline the proxy ends the run's
// calls in flight by itself, a stream that is still sending and a call
// whose answer never comes, each with run_budget_exceeded, while the run
// is still registered (its owner has not unregistered it: a child blocked
// in a call would otherwise stay blocked until KILL).
func TestRunDeadlineCutsCalls(t *testing.T) {
	h := newHarness(t, setup{scale: 0.1}) // every stale timeout (6 s at least, the budget cap) well after the deadline
	budget := timeouts.NewBudget(600*time.Millisecond, nil)
	t.Cleanup(budget.Stop)
	h.proxy.RegisterRun("dl", budget, "")
	t.Cleanup(func() { h.proxy.UnregisterRun("dl") })
	h.up.play(func(w http.ResponseWriter, r *http.Request, body map[string]any) {
		if s, _ := body["stream"].(bool); s {
			reasoning("content", -1)(w, r, body)
			return
		}
		hang(w, r, body)
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c := h.client("/run/dl/v1/")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() {
		s := c.Chat.Completions.NewStreaming(ctx, chatParams("gpt-4o"))
		defer s.Close()
		for s.Next() {
		}
		errs[0] = s.Err()
	})
	wg.Go(func() { _, errs[1] = c.Chat.Completions.New(ctx, chatParams("gpt-4o")) })
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("the calls were still running 20 s after the run's 600 ms deadline: %v", errs)
	}
	if msg := errMessage(t, errs[0]); !strings.Contains(msg, "reached its deadline") || !strings.Contains(msg, "the run's budget is spent") {
		t.Errorf("stream ended with %q, want the run's deadline", msg)
	}
	var api *openai.Error
	if !errors.As(errs[1], &api) || api.StatusCode != http.StatusGone || api.Code != timeouts.BudgetErrorCode {
		t.Errorf("the call waiting for its answer: %v, want 410 %s", errs[1], timeouts.BudgetErrorCode)
	}
	if d := time.Since(budget.Deadline()); d < 0 {
		t.Errorf("calls ended %v before the deadline", -d)
	}
	h.up.waitExit(t, 2)
}

// TestEndedRunRefused: a run that ended is remembered for RunMemory: a
// call of one that had spent its budget gets 410 run_budget_exceeded,
// one that ended earlier 410 run_ended; after RunMemory, 404 unknown_run,
// which does not ask the caller to start a job again.
func TestEndedRunRefused(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h := newHarness(t, setup{now: clock})
	h.up.play(answer)

	spent := timeouts.NewBudget(time.Millisecond, nil)
	t.Cleanup(spent.Stop)
	<-spent.Done()
	h.proxy.RegisterRun("spent", spent, "")
	h.proxy.UnregisterRun("spent")
	early := timeouts.NewBudget(time.Hour, nil)
	t.Cleanup(early.Stop)
	h.proxy.RegisterRun("early", early, "")
	h.proxy.UnregisterRun("early")

	call := func(id string) *openai.Error {
		t.Helper()
		c := h.client("/run/" + id + "/v1/")
		_, err := c.Chat.Completions.New(t.Context(), chatParams("gpt-4o"))
		var api *openai.Error
		if !errors.As(err, &api) {
			t.Fatalf("run %s: got %v, want an API error", id, err)
		}
		return api
	}
	if api := call("spent"); api.StatusCode != http.StatusGone || api.Code != timeouts.BudgetErrorCode {
		t.Errorf("a call of a spent run that ended: %d %s %q, want 410 %s", api.StatusCode, api.Code, api.Message, timeouts.BudgetErrorCode)
	}
	if api := call("early"); api.StatusCode != http.StatusGone || api.Code != "run_ended" {
		t.Errorf("a call of a run that ended within its budget: %d %s %q, want 410 run_ended", api.StatusCode, api.Code, api.Message)
	}
	mu.Lock()
	now = now.Add(RunMemory + time.Second)
	mu.Unlock()
	for _, id := range []string{"spent", "early", "never"} {
		api := call(id)
		if api.StatusCode != http.StatusNotFound || api.Code != "unknown_run" {
			t.Errorf("run %s after RunMemory: %d %s, want 404 unknown_run", id, api.StatusCode, api.Code)
		}
		if strings.Contains(api.Message, "start the job again") || !strings.Contains(api.Message, RunMemory.String()) {
			t.Errorf("run %s after RunMemory: %q, want how long a run is remembered, and no call to start the job again", id, api.Message)
		}
	}
	if n := h.up.calls.Load(); n != 0 {
		t.Errorf("the provider got %d calls, want 0", n)
	}
}

// TestEndedRunsBounded: the ended runs remembered are at most
// maxEndedRuns.
func TestEndedRunsBounded(t *testing.T) {
	e := endedRuns{m: map[string]endedRun{}}
	at := time.Now()
	for i := range maxEndedRuns + 10 {
		e.add(strings.Repeat("x", i%7)+time.Duration(i).String(), endedRun{at: at})
	}
	if len(e.m) > maxEndedRuns || len(e.order) > maxEndedRuns {
		t.Errorf("remembered %d ended runs (%d in order), want at most %d", len(e.m), len(e.order), maxEndedRuns)
	}
}
