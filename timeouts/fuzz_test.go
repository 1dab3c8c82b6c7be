package timeouts

import (
	"testing"
	"time"
)

// FuzzResolve checks the resolver's invariants over arbitrary inputs: every
// layer is positive and at most MaxTimeout, the chain ends on the value,
// and an explicit stale timeout is taken exactly (never lowered, never
// raised) on both stale layers.
func FuzzResolve(f *testing.F) {
	f.Add("openai/o3", "https://api.openai.com/v1", true, false, 120_000, int64(600_000), int64(100_000), int64(0), int64(0), int64(0), "", int64(0), 10_000, int64(600_000))
	f.Add("qwq-32b", "http://127.0.0.1:8080/v1", false, true, 0, int64(0), int64(0), int64(300_000), int64(900_000), int64(0), "150", int64(-1), 0, int64(0))
	f.Add("", "", true, true, -5, int64(-1), int64(-1), int64(-1), int64(-1), int64(-1), "1e300", int64(1), -1, int64(-1))
	f.Add("x/deepseek-v4", "host.docker.internal", true, true, 1<<40, int64(1)<<62, int64(0), int64(1), int64(0), int64(1)<<62, "NaN", int64(1)<<62, 1<<30, int64(1)<<62)
	f.Fuzz(func(t *testing.T, model, baseURL string, stream, responses bool, tokens int,
		budgetMs, spentMs, hardCapMs, providerStaleMs, modelStaleMs int64, envStale string,
		localMs int64, tierAbove int, tierMs int64) {
		ms := func(n int64) time.Duration {
			if n > int64(1<<62)/int64(time.Millisecond) || n < -int64(1<<62)/int64(time.Millisecond) {
				return time.Duration(n) // keep huge values huge without overflow
			}
			return time.Duration(n) * time.Millisecond
		}
		api := Chat
		if responses {
			api = Responses
		}
		in := Inputs{
			Provider: Provider{
				ID: "p", BaseURL: baseURL, StaleTimeout: ms(providerStaleMs),
				Models: map[string]Model{model: {StaleTimeout: ms(modelStaleMs)}},
				Tiers:  []Tier{{AboveTokens: tierAbove, Timeout: ms(tierMs)}},
				Floors: []Floor{{Slug: model, Timeout: ms(tierMs)}},
			},
			Model: model, Stream: stream, API: api, Tokens: tokens,
			Run:   RunBudget{Total: ms(budgetMs), Spent: ms(spentMs)},
			Agent: Agent{StaleTimeoutHardCap: ms(hardCapMs), LocalStreamStaleTimeout: ms(localMs), StreamDrainTimeout: ms(localMs)},
			Env:   env(EnvStaleTimeout, envStale, EnvGiveUp, envStale),
		}
		p := Resolve(in)
		for _, v := range p.Values() {
			if v.Timeout <= 0 || v.Timeout > MaxTimeout {
				t.Fatalf("%s = %v, want in (0, %v]; chain %s", v.Layer, v.Timeout, MaxTimeout, v.ChainString())
			}
			if len(v.Chain) == 0 || v.Chain[len(v.Chain)-1].Value != v.Timeout {
				t.Fatalf("%s = %v but chain is %q", v.Layer, v.Timeout, v.ChainString())
			}
		}
		if p.GiveUp < 0 {
			t.Fatalf("GiveUp = %d", p.GiveUp)
		}
		explicit := in.Provider.StaleTimeout
		if m := in.Provider.Models[model].StaleTimeout; m > 0 && model != "" { // an empty model name has no model entry
			explicit = m
		}
		if explicit > 0 {
			want := min(explicit, MaxTimeout)
			for _, l := range []Layer{StaleStream, StaleNonStream} {
				if got := p.Timeout(l); got != want {
					t.Fatalf("%s = %v with explicit %v, want %v", l, got, explicit, want)
				}
			}
		} else if d, err := ParseSeconds(envStale); err == nil {
			if got := p.Timeout(StaleStream); got != min(d, MaxTimeout) {
				t.Fatalf("stale stream = %v with %s=%q, want %v", got, EnvStaleTimeout, envStale, min(d, MaxTimeout))
			}
		}
	})
}
