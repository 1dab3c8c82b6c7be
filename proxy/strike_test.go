package proxy

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/hermes-units/hermes/timeouts"
	"github.com/hermes-units/hermes/units"
)

// sdk returns an openai-go client with the SDK's default retries (two),
// their delays shortened to a millisecond, and mw in front of the network.
func (h *harness) sdk(key string, mw ...option.Middleware) openai.Client {
	return openai.NewClient(option.WithBaseURL(h.url+"/v1/"), option.WithAPIKey(key), option.WithHTTPClient(h.hc),
		option.WithMaxRetryDelay(time.Millisecond), option.WithMiddleware(mw...))
}

// ignoreShouldRetry makes the SDK retry a cut as a client that does not
// read x-should-retry would; dropRetryCount hides the SDK's retry count,
// as a client that sends none.
func ignoreShouldRetry(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if res != nil {
		res.Header.Del("X-Should-Retry")
	}
	return res, err
}

func dropRetryCount(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	req.Header.Del(HeaderRetryCount)
	return next(req)
}

// TestStrikesOfOneSDKCall: one call of an OpenAI SDK with its default
// retries, against a provider that never answers, is one strike. The cut
// says x-should-retry: false, so the SDK sends it once; a client that
// retries anyway, marked by its retry count or by one idempotency key,
// still costs one strike.
func TestStrikesOfOneSDKCall(t *testing.T) {
	tests := []struct {
		name     string
		mw       []option.Middleware
		opts     []option.RequestOption
		attempts int32
		strikes  int
	}{
		{name: "default retries", attempts: 1, strikes: 1},
		{name: "a client that retries anyway", mw: []option.Middleware{ignoreShouldRetry}, attempts: 3, strikes: 1},
		{name: "retries by idempotency key", mw: []option.Middleware{ignoreShouldRetry, dropRetryCount},
			opts: []option.RequestOption{option.WithHeader(HeaderIdempotencyKey, "call-1")}, attempts: 3, strikes: 1},
		{name: "retries nothing marks", mw: []option.Middleware{ignoreShouldRetry, dropRetryCount}, attempts: 3, strikes: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, setup{})
			h.up.play(hang)
			var attempts atomic.Int32
			var last atomic.Pointer[http.Header]
			c := h.sdk(testToken, append([]option.Middleware{countAttempts(&attempts, &last)}, tt.mw...)...)
			_, err := c.Chat.Completions.New(t.Context(), chatParams("gpt-4o"), tt.opts...)
			var api *openai.Error
			if !errors.As(err, &api) || api.StatusCode != http.StatusGatewayTimeout {
				t.Fatalf("got %v, want a 504 stale cut", err)
			}
			h.up.waitExit(t, int(tt.attempts))
			st := h.proxy.Status()
			if len(st) != 1 {
				t.Fatalf("got %d sessions, want 1: %+v", len(st), st)
			}
			t.Logf("one SDK call with default retries against a silent upstream (%s): %d attempts reached the proxy, %d upstream calls, model streak %d, provider streak %d",
				tt.name, attempts.Load(), h.up.calls.Load(), st[0].Streak, st[0].ProviderStreak)
			if got := attempts.Load(); got != tt.attempts {
				t.Errorf("the SDK sent %d attempts, want %d", got, tt.attempts)
			}
			if st[0].Streak != tt.strikes || st[0].ProviderStreak != tt.strikes {
				t.Errorf("got streaks %d/%d, want %d strikes", st[0].Streak, st[0].ProviderStreak, tt.strikes)
			}
		})
	}
}

// TestStaleCutSaysShouldRetry: a cut before the stream started tells the
// SDK not to retry it, on every stale layer the client can see as a 504.
func TestStaleCutSaysShouldRetry(t *testing.T) {
	h := newHarness(t, setup{})
	h.up.play(hang)
	var attempts atomic.Int32
	var last atomic.Pointer[http.Header]
	c := h.sdk(testToken, countAttempts(&attempts, &last))
	for _, streaming := range []bool{false, true} {
		attempts.Store(0)
		var err error
		if streaming {
			_, err = stream(t, c, "gpt-4o") // no headers ever: the socket read layer cuts it
		} else {
			_, err = c.Chat.Completions.New(t.Context(), chatParams("gpt-4o"))
		}
		var api *openai.Error
		if !errors.As(err, &api) || api.StatusCode != http.StatusGatewayTimeout {
			t.Fatalf("stream=%v: got %v, want a 504", streaming, err)
		}
		if got := (*last.Load()).Get("X-Should-Retry"); got != "false" {
			t.Errorf("stream=%v: X-Should-Retry = %q, want false", streaming, got)
		}
		if got := attempts.Load(); got != 1 {
			t.Errorf("stream=%v: %d attempts, want 1", streaming, got)
		}
	}
	h.up.waitExit(t, 2)
}

// TestSessionsPerClient: clients with different tokens, or runs, have
// their own streaks; one token shares one. The token itself is never
// shown.
func TestSessionsPerClient(t *testing.T) {
	h := newHarness(t, setup{env: map[string]string{timeouts.EnvGiveUp: "1"}})
	h.up.play(keepAlives)
	a, b := h.client("/v1/", option.WithAPIKey(testToken+":a")), h.client("/v1/", option.WithAPIKey(testToken+":b"))
	if _, err := stream(t, a, "gpt-4o"); err == nil {
		t.Fatal("got no error, want a stale cut")
	}
	h.up.waitExit(t, 1)
	var api *openai.Error
	if _, err := stream(t, a, "gpt-4o"); !errors.As(err, &api) || api.Code != "stale_giveup" {
		t.Fatalf("client a again: got %v, want stale_giveup", err)
	}
	h.up.play(answer)
	if _, err := stream(t, b, "gpt-4o"); err != nil {
		t.Errorf("client b: got %v, want an answer: another client's streak is not its own", errMessage(t, err))
	}
	h.proxy.RegisterRun("job-1", nil, "")
	h.proxy.RegisterRun("job-2", nil, "")
	h.up.play(keepAlives)
	if _, err := stream(t, h.client("/run/job-1/v1/", option.WithAPIKey(testToken+":a")), "gpt-4o"); err == nil || errors.As(err, &api) && api.Code == "stale_giveup" {
		t.Fatalf("run job-1: got %v, want a stale cut of its own", err)
	}
	h.up.waitExit(t, 1)
	h.up.play(answer)
	if _, err := stream(t, h.client("/v1/", option.WithHeader(HeaderRunID, "job-2"), option.WithAPIKey(testToken+":a")), "gpt-4o"); err != nil {
		t.Errorf("run job-2: got %v, want an answer", errMessage(t, err))
	}
	var keys []string
	for _, s := range h.proxy.Status() {
		keys = append(keys, s.Session)
		if strings.Contains(s.Session, testToken) {
			t.Errorf("session key %q shows the client's token", s.Session)
		}
	}
	if len(keys) != 4 || !strings.HasPrefix(keys[0], "run job-1 → openai") || !strings.HasPrefix(keys[2], "token sha256:") {
		t.Errorf("got sessions %q, want two runs and two tokens", keys)
	}
}

// TestProviderStreakThroughProxy: an agent alternating between two models
// that both go silent is stopped by the provider streak; 0 disables it.
func TestProviderStreakThroughProxy(t *testing.T) {
	models := map[string]units.ProviderModel{"gpt-4o": {}, "gpt-4o-mini": {}, "o3-mini": {}}
	for _, giveUp := range []string{"3", "0"} {
		t.Run("giveup="+giveUp, func(t *testing.T) {
			h := newHarness(t, setup{models: models, env: map[string]string{timeouts.EnvGiveUp: giveUp}})
			h.up.play(keepAlives)
			c := h.client("/v1/")
			for i, m := range []string{"gpt-4o", "gpt-4o-mini", "gpt-4o"} {
				if msg := errMessage(t, second(stream(t, c, m))); !strings.Contains(msg, "stale stream timeout") {
					t.Fatalf("call %d: got %q, want a stale cut", i+1, msg)
				}
			}
			h.up.waitExit(t, 3)
			st := h.proxy.Status()
			if len(st) != 1 || st[0].Streak != 1 || st[0].ProviderStreak != 3 {
				t.Fatalf("got %+v, want model streak 1 and provider streak 3", st)
			}
			_, err := stream(t, c, "o3-mini")
			if giveUp == "0" {
				if err == nil || strings.Contains(errMessage(t, err), "consecutive") {
					t.Errorf("disabled: got %v, want the call to go through to its cut", err)
				}
				if st := h.proxy.Status(); st[0].Tripped {
					t.Errorf("disabled: got %+v, want not tripped", st)
				}
				return
			}
			var api *openai.Error
			if !errors.As(err, &api) || api.Code != "stale_giveup" || !strings.Contains(api.Message, "3 consecutive stale kills across models gpt-4o, gpt-4o-mini") {
				t.Fatalf("fourth model: got %v, want the provider streak's give-up", err)
			}
			if st := h.proxy.Status(); !st[0].Tripped || st[0].TrippedBy != timeouts.ScopeProvider {
				t.Errorf("got %+v, want tripped by the provider streak", st)
			}
		})
	}
}

func second[T any](_ T, err error) error { return err }
