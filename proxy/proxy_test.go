package proxy

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/hermes-units/hermes/timeouts"
	"github.com/hermes-units/hermes/units"
)

func TestStreamSilence(t *testing.T) {
	tests := []struct {
		name    string
		model   string
		play    script
		cut     bool
		message []string // substrings of the client's error message
	}{
		// At silenceScale o3 has a 600 s floor (6 s scaled): 3 s of
		// thinking is longer than the 180 s chat default (1.8 s), shorter
		// than the floor.
		{name: "reasoning model within its floor", model: "o3", play: think(3 * time.Second)},
		{name: "chat model cut at its stale timeout", model: "gpt-4o", play: think(3 * time.Second), cut: true,
			message: []string{"stale stream timeout fired after 180s", "default 180s", "raise providers.openai.models.gpt-4o.stale_timeout_seconds or set HERMES_STREAM_STALE_TIMEOUT"}},
		{name: "keep-alives alone do not keep a stream alive", model: "gpt-4o", play: keepAlives, cut: true,
			message: []string{"stale stream timeout", "keep-alives do not count"}},
		{name: "reasoning_content deltas do", model: "gpt-4o", play: reasoning("reasoning_content", 3*time.Second)},
		{name: "reasoning deltas do", model: "gpt-4o", play: reasoning("reasoning", 3*time.Second)},
	}
	// 1/100 rather than the harness's 1/1000: a stream that must live
	// through a loaded machine's scheduling gaps (a 120 ms socket read
	// timeout at 1/1000 is one such gap) gets 1.2 s; the cases run side
	// by side.
	const silenceScale = 0.01
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, setup{scale: silenceScale})
			h.up.play(tt.play)
			text, err := stream(t, h.client("/v1/"), tt.model)
			if !tt.cut {
				if err != nil {
					t.Fatalf("got error %v, want the answer", errMessage(t, err))
				}
				if text == "" {
					t.Errorf("got no content, want the answer")
				}
				return
			}
			if err == nil {
				t.Fatalf("got answer %q and no error, want a cut", text)
			}
			msg := errMessage(t, err)
			t.Logf("the client received: %s", msg)
			says(t, msg, tt.message...)
			h.up.waitExit(t, 1)
		})
	}
}

func TestExplicitStaleAndEnv(t *testing.T) {
	tests := []struct {
		name  string
		s     setup
		model string
		want  []string
	}{
		{name: "explicit model value", model: "gpt-4o",
			s:    setup{models: map[string]units.ProviderModel{"gpt-4o": {StaleTimeout: 100 * time.Second}}},
			want: []string{"after 100s", "explicit: providers.openai.models.gpt-4o.stale_timeout_seconds = 100s", "raise providers.openai.models.gpt-4o.stale_timeout_seconds"}},
		{name: "explicit provider value beats the floor", model: "o3",
			s:    setup{stale: 150 * time.Second},
			want: []string{"after 150s", "explicit: providers.openai.stale_timeout_seconds = 150s", "raise providers.openai.stale_timeout_seconds"}},
		{name: "HERMES_STREAM_STALE_TIMEOUT", model: "o3",
			s:    setup{env: map[string]string{timeouts.EnvStaleTimeout: "130"}},
			want: []string{"after 130s", "raise HERMES_STREAM_STALE_TIMEOUT"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.s)
			h.up.play(keepAlives)
			_, err := stream(t, h.client("/v1/"), tt.model)
			msg := errMessage(t, err)
			says(t, msg, tt.want...)
			h.up.waitExit(t, 1)
		})
	}
}

func TestNonStreamNeverAnswers(t *testing.T) {
	h := newHarness(t, setup{})
	h.up.play(hang)
	c := h.client("/v1/")
	_, err := c.Chat.Completions.New(t.Context(), chatParams("gpt-4o"))
	var api *openai.Error
	if !errors.As(err, &api) {
		t.Fatalf("got %v, want an API error", err)
	}
	if api.StatusCode != http.StatusGatewayTimeout || api.Code != "hermes_stale_non_stream_timeout" || api.Type != "timeout_error" {
		t.Errorf("got status %d code %q type %q, want 504 hermes_stale_non_stream_timeout timeout_error", api.StatusCode, api.Code, api.Type)
	}
	if !strings.Contains(api.Message, "stale non-stream timeout fired") || !strings.Contains(api.Message, "default 90s") {
		t.Errorf("client error %q does not name the layer and its chain", api.Message)
	}
	h.up.waitExit(t, 1)
}

func TestResponsesFirstEvent(t *testing.T) {
	h := newHarness(t, setup{})
	h.up.play(noFirstEvent)
	c := h.client("/v1/")
	s := c.Responses.NewStreaming(t.Context(), responses.ResponseNewParams{
		Model: "gpt-4o", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
	})
	for s.Next() {
	}
	err := s.Err()
	s.Close()
	msg := errMessage(t, err)
	if !strings.Contains(msg, "first event timeout fired") || !strings.Contains(msg, "within 120s") {
		t.Errorf("client error %q does not name the first-event layer", msg)
	}
	h.up.waitExit(t, 1)
}

func TestDrainClosesNeverClosingRelay(t *testing.T) {
	h := newHarness(t, setup{})
	h.up.play(neverClose)
	text, err := stream(t, h.client("/v1/"), "gpt-4o")
	if err != nil {
		t.Fatalf("got error %v, want a complete answer", errMessage(t, err))
	}
	if text != "hello" {
		t.Errorf("got %q, want %q", text, "hello")
	}
	h.up.waitExit(t, 1) // the proxy closed the relay after the drain
	if st := h.proxy.Status(); len(st) != 1 || st[0].Streak != 0 {
		t.Errorf("got breaker status %+v, want one session with streak 0", st)
	}
}

func TestRoutingKeysAndModels(t *testing.T) {
	h := newHarness(t, setup{})
	h.up.play(answer)
	c := h.client("/v1/")
	res, err := c.Chat.Completions.New(t.Context(), chatParams("openai/gpt-4o"))
	if err != nil {
		t.Fatal(errMessage(t, err))
	}
	if got := res.Choices[0].Message.Content; got != "hello" {
		t.Errorf("got %q, want hello", got)
	}
	body, auth := h.up.last()
	if body["model"] != "gpt-4o" {
		t.Errorf("upstream got model %v, want gpt-4o", body["model"])
	}
	if auth != "Bearer upstream-key" {
		t.Errorf("upstream got Authorization %q, want the provider's key, never the client's", auth)
	}
	page, err := c.Models.List(t.Context())
	if err != nil {
		t.Fatal(errMessage(t, err))
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if got, want := strings.Join(ids, ","), "gpt-4o,gpt-4o-mini,o3"; got != want {
		t.Errorf("got models %s, want %s", got, want)
	}
	resp, err := h.hc.Post(h.url+"/v1/completions", "application/json", strings.NewReader(`{"model":"gpt-4o"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown route: got %d, want 404", resp.StatusCode)
	}
}

func TestBreaker(t *testing.T) {
	h := newHarness(t, setup{})
	c := h.client("/v1/", option.WithHeader(HeaderSession, "s1"))
	h.up.play(keepAlives)
	for i := range 5 {
		_, err := stream(t, c, "gpt-4o")
		if msg := errMessage(t, err); !strings.Contains(msg, "stale stream timeout") {
			t.Fatalf("call %d: got %q, want a stale cut", i+1, msg)
		}
	}
	h.up.waitExit(t, 5)
	st := h.proxy.Status()
	if len(st) != 1 || st[0].Session != "s1" || st[0].Streak != 5 || !st[0].Tripped || st[0].Model != "gpt-4o" {
		t.Fatalf("got status %+v, want s1 tripped with streak 5 on gpt-4o", st)
	}
	before := h.up.calls.Load()
	_, err := stream(t, c, "gpt-4o")
	var api *openai.Error
	if !errors.As(err, &api) || api.StatusCode != http.StatusServiceUnavailable || api.Code != "stale_giveup" {
		t.Fatalf("sixth call: got %v, want 503 stale_giveup", err)
	}
	if !strings.Contains(api.Message, "5 consecutive stale kills") {
		t.Errorf("give-up error %q does not name the streak", api.Message)
	}
	if got := h.up.calls.Load(); got != before {
		t.Errorf("the sixth call reached the provider (%d calls, want %d)", got, before)
	}

	// Another session is not affected.
	h.up.play(answer)
	if _, err := stream(t, h.client("/v1/", option.WithHeader(HeaderSession, "s2")), "gpt-4o"); err != nil {
		t.Errorf("other session: got %v, want an answer", errMessage(t, err))
	}
	// A model change resets the breaker: the call goes through.
	if _, err := stream(t, c, "gpt-4o-mini"); err != nil {
		t.Errorf("after a model change: got %v, want an answer", errMessage(t, err))
	}
	for _, s := range h.proxy.Status() {
		if s.Session == "s1" && (s.Streak != 0 || s.Tripped) {
			t.Errorf("after a model change: got %+v, want streak 0", s)
		}
	}
}

func TestBreakerNewTurn(t *testing.T) {
	h := newHarness(t, setup{env: map[string]string{timeouts.EnvGiveUp: "1"}})
	h.up.play(keepAlives)
	turn1 := h.client("/v1/", option.WithHeader(HeaderTurn, "1"))
	if _, err := stream(t, turn1, "gpt-4o"); err == nil {
		t.Fatal("got no error, want a stale cut")
	}
	h.up.waitExit(t, 1)
	_, err := stream(t, turn1, "gpt-4o")
	var api *openai.Error
	if !errors.As(err, &api) || api.Code != "stale_giveup" {
		t.Fatalf("same turn: got %v, want stale_giveup", err)
	}
	h.up.play(answer)
	if _, err := stream(t, h.client("/v1/", option.WithHeader(HeaderTurn, "2")), "gpt-4o"); err != nil {
		t.Errorf("new turn: got %v, want an answer", errMessage(t, err))
	}
}

func TestRunBudget(t *testing.T) {
	h := newHarness(t, setup{})
	budget := timeouts.NewBudget(500*time.Millisecond, nil)
	t.Cleanup(budget.Stop)
	const notice = "Budget nearly spent: wrap up and deliver now."
	h.proxy.RegisterRun("job1", budget, notice)
	c := h.client("/run/job1/v1/")
	h.up.play(answer)

	countNotices := func() int {
		body, _ := h.up.last()
		n := 0
		for _, m := range body["messages"].([]any) {
			if m.(map[string]any)["content"] == notice {
				n++
			}
		}
		return n
	}
	if _, err := c.Chat.Completions.New(t.Context(), chatParams("gpt-4o")); err != nil {
		t.Fatal(errMessage(t, err))
	}
	select {
	case <-budget.WrapUp():
		t.Skip("the first call outlived 80 % of a 500 ms budget: machine too slow to check the before-wrap-up case")
	default:
	}
	if n := countNotices(); n != 0 {
		t.Errorf("before 80 %%: got %d notices, want 0", n)
	}
	<-budget.WrapUp()
	for i, want := range []int{1, 0} {
		if _, err := c.Chat.Completions.New(t.Context(), chatParams("gpt-4o")); err != nil {
			t.Fatal(errMessage(t, err))
		}
		if n := countNotices(); n != want {
			t.Errorf("call %d after 80 %%: got %d notices, want %d", i+1, n, want)
		}
		body, _ := h.up.last()
		msgs := body["messages"].([]any)
		if last := msgs[len(msgs)-1].(map[string]any); want == 1 && last["role"] != "system" {
			t.Errorf("got notice role %v, want system", last["role"])
		}
	}

	// The budget caps the implicit stale timeout (180 s → 60 s floor of
	// the cap: less than 2 minutes are left). A run of its own, whose
	// deadline (which ends its calls) a slow machine cannot reach first.
	capped := timeouts.NewBudget(100*time.Second, nil)
	t.Cleanup(capped.Stop)
	h.proxy.RegisterRun("capped", capped, "")
	h.up.play(keepAlives)
	_, err := stream(t, h.client("/run/capped/v1/"), "gpt-4o")
	msg := errMessage(t, err)
	if !strings.Contains(msg, "after 60s") || !strings.Contains(msg, "budget cap") {
		t.Errorf("client error %q: want a stale cut at the 60s budget cap", msg)
	}
	h.up.waitExit(t, 1)

	// Responses: the notice goes into instructions.
	// The run resumes with 90 % of an hour spent: past its wrap-up timer,
	// and not spent for minutes (a spent run's calls are refused:
	// TestRunBudgetSpent). A budget of 1 ms whose clock stood still was
	// spent by its deadline timer, which runs on real time, as soon as a
	// loaded machine let the call start after it: the call was ended.
	frozen := time.Now()
	budget2 := timeouts.ResumeBudget(time.Hour, 54*time.Minute, func() time.Time { return frozen })
	t.Cleanup(budget2.Stop)
	<-budget2.WrapUp()
	h.proxy.RegisterRun("job2", budget2, notice)
	h.up.play(func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"r1","object":"response","created_at":1,"model":"m","output":[],"status":"completed"}`))
	})
	c2 := h.client("/v1/", option.WithHeader(HeaderRunID, "job2"))
	_, err = c2.Responses.New(t.Context(), responses.ResponseNewParams{
		Model: "gpt-4o", Instructions: openai.String("Be brief."), Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
	})
	if err != nil {
		t.Fatal(errMessage(t, err))
	}
	body, _ := h.up.last()
	if got, want := body["instructions"], "Be brief.\n\n"+notice; got != want {
		t.Errorf("got instructions %q, want %q", got, want)
	}

	h.proxy.UnregisterRun("job1")
	_, err = c.Chat.Completions.New(t.Context(), chatParams("gpt-4o"))
	var api *openai.Error
	if !errors.As(err, &api) || api.StatusCode != http.StatusGone || (api.Code != "run_ended" && api.Code != timeouts.BudgetErrorCode) {
		t.Errorf("unregistered run: got %v, want 410 run_ended or %s (TestEndedRunRefused)", err, timeouts.BudgetErrorCode)
	}
}

func TestCheckLoopback(t *testing.T) {
	tests := []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:7411", true}, {"[::1]:7411", true}, {"localhost:7411", true}, {"127.1.2.3:0", true},
		{"0.0.0.0:7411", false}, {":7411", false}, {"192.168.1.2:7411", false}, {"example.com:7411", false}, {"nonsense", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			err := CheckLoopback(tt.addr)
			if (err == nil) != tt.ok {
				t.Errorf("got %v, want ok=%v", err, tt.ok)
			}
			if err != nil && tt.addr != "nonsense" && !errors.Is(err, ErrNotLoopback) {
				t.Errorf("got %v, want ErrNotLoopback", err)
			}
		})
	}
	o := testOptions(t)
	o.Listen = "0.0.0.0:0"
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Listen(t.Context()); !errors.Is(err, ErrNotLoopback) {
		t.Errorf("Listen 0.0.0.0: got %v, want ErrNotLoopback", err)
	}
}

func TestServeEndsInFlightStreams(t *testing.T) {
	h := newHarness(t, setup{stale: time.Hour}) // nothing cuts the stream but shutdown
	h.up.play(keepAlives)
	c := h.client("/v1/")
	s := c.Chat.Completions.NewStreaming(t.Context(), chatParams("gpt-4o"))
	defer s.Close()
	if !s.Next() { // the role chunk: the stream is in flight
		t.Fatalf("got no first chunk: %v", s.Err())
	}
	if err := h.stop(); err != nil {
		t.Errorf("Serve: got %v, want nil", err)
	}
	for s.Next() {
	}
	if msg := errMessage(t, s.Err()); !strings.Contains(msg, "shutting down") {
		t.Errorf("got %q, want the shutdown error event", msg)
	}
	h.up.waitExit(t, 1)
}

func TestRunBaseURL(t *testing.T) {
	for _, base := range []string{"http://127.0.0.1:7411", "http://127.0.0.1:7411/"} {
		if got, want := RunBaseURL(base, "nightly 42"), "http://127.0.0.1:7411/run/nightly%2042/v1"; got != want {
			t.Errorf("RunBaseURL(%q): got %s, want %s", base, got, want)
		}
	}
}
