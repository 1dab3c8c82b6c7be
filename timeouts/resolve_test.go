package timeouts

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

const s = time.Second

func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestMatchFloor(t *testing.T) {
	tests := []struct {
		model    string
		want     time.Duration // 0: no floor
		thinking bool          // the request enables thinking
	}{
		{"openai/o3-mini", 300 * s, false},
		{"openai/o3", 600 * s, false},
		{"qwen/qwen3-32b", 180 * s, false},
		{"anthropic/claude-opus-4-20250514", 240 * s, true},
		{"anthropic/claude-opus-4-20250514", 0, false},
		{"claude-opus-4-5", 0, false},
		{"claude-opus-4-5", 240 * s, true},
		{"anthropic/claude-opus-4.1:thinking", 240 * s, false},
		{"claude-opus-4-5-thinking-preview", 240 * s, false},
		{"claude-opus-4-5-rethinking", 0, false},
		{"thinkingmachines/inkling:free", 300 * s, false},
		{"deepseek-v4-flash-model", 600 * s, false},
		{"some-deepseek-v4-flash", 0, false},
		{"deepseek-chat", 0, false},
		{"minimax-m2.5", 300 * s, false},
		{"OpenAI/O3-PRO", 600 * s, false},
		{"o3_high", 600 * s, false},
		{"o30", 0, false},
		{"router/openai/o4-mini-2025", 300 * s, false},
		{"nvidia/nemotron-3-ultra-253b", 600 * s, false},
		{"nemotron-3-nano", 300 * s, false},
		{"deepseek-r1-distill", 600 * s, false},
		{"deepseek-reasoner", 600 * s, false},
		{"gpt-5.6-codex", 600 * s, false},
		{"gpt-5", 0, false},
		{"gpt-6", 600 * s, false},
		{"claude-fable", 600 * s, false},
		{"qwq-32b", 300 * s, false},
		{"ox-alpha", 300 * s, false},
		{"claude-opus-4.5-thinking", 240 * s, false},
		{"claude-opus-5", 240 * s, true},
		{"claude-opus-5", 0, false},
		{"qwen3-235b-a22b-thinking-2507", 180 * s, false},
		{"o3", 600 * s, true},
		{"claude-sonnet-4-5-20250929", 180 * s, false},
		{"claude-sonnet-4.6", 180 * s, false},
		{"claude-sonnet-5", 180 * s, false},
		{"claude-sonnet-4-20250514", 0, false},
		{"gpt-4o", 0, false},
		{"", 0, false},
		{"openai/", 0, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s thinking=%v", tt.model, tt.thinking), func(t *testing.T) {
			f, ok := MatchFloor(tt.model, tt.thinking, nil)
			got := time.Duration(0)
			if ok {
				got = f.Timeout
			}
			if got != tt.want {
				t.Errorf("MatchFloor(%q, thinking=%v) = %v (slug %q), want %v", tt.model, tt.thinking, got, f.Slug, tt.want)
			}
		})
	}
}

func TestMatchFloorExtra(t *testing.T) {
	extra := []Floor{{Slug: "My-Model", Timeout: 420 * s}, {Slug: "o3", Timeout: 900 * s}, {Slug: "", Timeout: s}, {Slug: "gpt-4o", Timeout: -s}}
	tests := []struct {
		model string
		want  time.Duration
	}{
		{"vendor/my-model-7b", 420 * s},
		{"o3", 900 * s},      // a configured slug replaces the built-in value
		{"o3-mini", 300 * s}, // longest slug still wins
		{"gpt-4o", 0},        // invalid extra floors are ignored
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			f, ok := MatchFloor(tt.model, false, extra)
			got := time.Duration(0)
			if ok {
				got = f.Timeout
			}
			if got != tt.want {
				t.Errorf("MatchFloor(%q) = %v, want %v", tt.model, got, tt.want)
			}
		})
	}
}

func TestLocal(t *testing.T) {
	tests := []struct {
		url  string
		want bool
	}{
		{"http://localhost:8080/v1", true},
		{"http://LOCALHOST./v1", true},
		{"http://ollama.localhost:11434", true},
		{"http://127.0.0.1:8080/v1", true},
		{"http://127.8.9.10/v1", true},
		{"http://[::1]:8080/v1", true},
		{"http://0.0.0.0:8000", true},
		{"http://[::]:8000", true},
		{"http://10.1.2.3/v1", true},
		{"http://172.16.0.5/v1", true},
		{"http://172.32.0.5/v1", false},
		{"http://192.168.1.20:1234/v1", true},
		{"http://169.254.10.1/v1", true},
		{"http://[fe80::1%25eth0]:8080/v1", true},
		{"http://[fd00::2]/v1", true},
		{"http://100.64.0.1/v1", true},
		{"http://100.127.255.254/v1", true},
		{"http://100.128.0.1/v1", false},
		{"http://[::ffff:127.0.0.1]/v1", true},
		{"http://gpu-box.local:8080/v1", true},
		{"http://llama:8080/v1", true},
		{"http://host.docker.internal:11434/v1", true},
		{"127.0.0.1:8080/v1", true},
		{"https://api.openai.com/v1", false},
		{"https://8.8.8.8/v1", false},
		{"https://openrouter.ai/api/v1", false},
		{"", false},
		{"://bad", false},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			got, why := Local(tt.url)
			if got != tt.want {
				t.Errorf("Local(%q) = %v (%s), want %v", tt.url, got, why, tt.want)
			}
			if got && why == "" {
				t.Errorf("Local(%q) gave no reason", tt.url)
			}
		})
	}
}

func TestRunBudgetLimit(t *testing.T) {
	tests := []struct {
		name   string
		run    RunBudget
		want   time.Duration
		wantOK bool
	}{
		{"no budget", RunBudget{}, 0, false},
		{"half of remaining", RunBudget{600 * s, 100 * s}, 250 * s, true},
		{"never under 60s", RunBudget{600 * s, 500 * s}, 60 * s, true},
		{"overspent", RunBudget{600 * s, 900 * s}, 60 * s, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok := tt.run.Limit(); got != tt.want || ok != tt.wantOK {
				t.Errorf("%+v.Limit() = %v, %v, want %v, %v", tt.run, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestEstimateTokens(t *testing.T) {
	tests := []struct {
		name  string
		texts []string
		want  int
	}{
		{"empty", nil, 0},
		{"rounds up", []string{"abcde"}, 2},
		{"sums parts", []string{"abcd", "efgh", "ijkl"}, 3},
		{"counts characters, not bytes", []string{"éééé"}, 1},
		{"large", []string{strings.Repeat("x", 480_000)}, 120_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EstimateTokens(tt.texts...); got != tt.want {
				t.Errorf("EstimateTokens = %d, want %d", got, tt.want)
			}
		})
	}
}

var (
	openai    = Provider{ID: "openai", BaseURL: "https://api.openai.com/v1"}
	anthropic = Provider{ID: "anthropic", BaseURL: "https://api.anthropic.com/v1"}
	local     = Provider{ID: "llama", BaseURL: "http://127.0.0.1:8080/v1"}
	// responsesBackend declares its own tiers, as a Responses API relay.
	responsesBackend = Provider{ID: "codex", BaseURL: "https://relay.example.com/v1", Tiers: []Tier{
		{10_000, 600 * s}, {50_000, 900 * s}, {100_000, 1200 * s},
	}}
)

func withStale(p Provider, d time.Duration) Provider { p.StaleTimeout = d; return p }

func withModel(p Provider, model string, d time.Duration) Provider {
	p.Models = map[string]Model{model: {StaleTimeout: d}}
	return p
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name     string
		in       Inputs
		layer    Layer
		want     time.Duration
		explicit bool
		chain    []StepKind // nil: not checked
	}{
		// The cases.
		{"nemotron floor, streaming, 10k", Inputs{Provider: openai, Model: "nvidia/nemotron-3-ultra", Stream: true, Tokens: 10_000}, StaleStream, 600 * s, false, []StepKind{StepDefault, StepFloor}},
		{"explicit provider beats floor", Inputs{Provider: withStale(openai, 120*s), Model: "nvidia/nemotron-3-ultra", Stream: true, Tokens: 10_000}, StaleStream, 120 * s, true, []StepKind{StepExplicit, StepFloor}},
		{"env beats floor", Inputs{Provider: openai, Model: "nvidia/nemotron-3-ultra", Stream: true, Tokens: 10_000, Env: env(EnvStaleTimeout, "150")}, StaleStream, 150 * s, true, []StepKind{StepEnv}},
		{"chat model 60k", Inputs{Provider: openai, Model: "gpt-4o", Stream: true, Tokens: 60_000}, StaleStream, 240 * s, false, []StepKind{StepDefault, StepTier}},
		{"chat model 120k", Inputs{Provider: openai, Model: "gpt-4o", Stream: true, Tokens: 120_000}, StaleStream, 300 * s, false, []StepKind{StepDefault, StepTier}},
		{"chat model 10k", Inputs{Provider: openai, Model: "gpt-4o", Stream: true, Tokens: 10_000}, StaleStream, 180 * s, false, []StepKind{StepDefault}},
		{"local stale stream", Inputs{Provider: local, Model: "qwq-32b", Stream: true}, StaleStream, 900 * s, false, []StepKind{StepLocal}},
		{"local socket read", Inputs{Provider: local, Model: "qwq-32b", Stream: true}, SocketRead, 1800 * s, false, []StepKind{StepLocal}},
		{"local stale non-stream is finite", Inputs{Provider: local, Model: "qwq-32b"}, StaleNonStream, 900 * s, false, []StepKind{StepLocal}},
		{"local first event", Inputs{Provider: local, Model: "qwq-32b", Stream: true, API: Responses}, FirstEvent, 900 * s, false, []StepKind{StepLocal}},
		{"budget: o3, 500s of 600 spent", Inputs{Provider: openai, Model: "openai/o3", Stream: true, Run: RunBudget{600 * s, 500 * s}}, StaleStream, 60 * s, false, []StepKind{StepDefault, StepFloor, StepBudget}},
		{"budget: o3, 100s of 600 spent", Inputs{Provider: openai, Model: "openai/o3", Stream: true, Run: RunBudget{600 * s, 100 * s}}, StaleStream, 250 * s, false, []StepKind{StepDefault, StepFloor, StepBudget}},
		{"budget: chat model, 100s spent, cap never raises", Inputs{Provider: openai, Model: "gpt-4o", Stream: true, Run: RunBudget{600 * s, 100 * s}}, StaleStream, 180 * s, false, []StepKind{StepDefault}},
		{"budget: env deadline is not capped", Inputs{Provider: openai, Model: "openai/o3", Stream: true, Run: RunBudget{600 * s, 500 * s}, Env: env(EnvStaleTimeout, "900")}, StaleStream, 900 * s, true, []StepKind{StepEnv}},
		{"budget: non-stream o3 capped the same way", Inputs{Provider: openai, Model: "openai/o3", Run: RunBudget{600 * s, 100 * s}}, StaleNonStream, 250 * s, false, []StepKind{StepDefault, StepFloor, StepBudget}},

		// SPEC §10 and the seed.
		{"default stale stream", Inputs{Provider: openai, Model: "gpt-4o", Stream: true}, StaleStream, 180 * s, false, nil},
		{"default stale non-stream", Inputs{Provider: openai, Model: "gpt-4o"}, StaleNonStream, 90 * s, false, nil},
		{"default socket read", Inputs{Provider: openai, Model: "gpt-4o", Stream: true}, SocketRead, 120 * s, false, nil},
		{"default first event", Inputs{Provider: openai, Model: "gpt-4o", Stream: true, API: Responses}, FirstEvent, 120 * s, false, nil},
		{"default API call", Inputs{Provider: openai, Model: "gpt-4o"}, APICall, 1800 * s, false, nil},
		{"default drain", Inputs{Provider: openai, Model: "gpt-4o", Stream: true}, Drain, 2 * s, false, nil},
		{"local API call", Inputs{Provider: local, Model: "x"}, APICall, 1800 * s, false, nil},
		{"local drain", Inputs{Provider: local, Model: "x", Stream: true}, Drain, 2 * s, false, nil},
		{"non-stream tier 60k", Inputs{Provider: openai, Model: "gpt-4o", Tokens: 60_000}, StaleNonStream, 150 * s, false, []StepKind{StepDefault, StepTier}},
		{"non-stream tier 120k", Inputs{Provider: openai, Model: "gpt-4o", Tokens: 120_000}, StaleNonStream, 240 * s, false, nil},
		{"tier boundary is strict", Inputs{Provider: openai, Model: "gpt-4o", Stream: true, Tokens: 50_000}, StaleStream, 180 * s, false, nil},
		{"o3-mini floor", Inputs{Provider: openai, Model: "openai/o3-mini", Stream: true}, StaleStream, 300 * s, false, nil},
		{"minimax floor above default", Inputs{Provider: openai, Model: "minimax-m2.5", Stream: true}, StaleStream, 300 * s, false, nil},
		{"tier then floor: o3 at 120k", Inputs{Provider: openai, Model: "o3", Stream: true, Tokens: 120_000}, StaleStream, 600 * s, false, []StepKind{StepDefault, StepTier, StepFloor}},
		{"floor applies to non-stream", Inputs{Provider: openai, Model: "o3"}, StaleNonStream, 600 * s, false, nil},
		{"explicit model beats explicit provider", Inputs{Provider: withModel(withStale(openai, 300*s), "o3", 45*s), Model: "openai/o3", Stream: true}, StaleStream, 45 * s, true, []StepKind{StepExplicit, StepFloor}},
		{"explicit model on non-stream too", Inputs{Provider: withModel(openai, "o3", 45*s), Model: "o3"}, StaleNonStream, 45 * s, true, nil},
		{"explicit beats env", Inputs{Provider: withStale(openai, 120*s), Model: "o3", Stream: true, Env: env(EnvStaleTimeout, "150")}, StaleStream, 120 * s, true, nil},
		{"explicit is never budget-capped", Inputs{Provider: withStale(local, 900*s), Model: "qwq", Stream: true, Run: RunBudget{600 * s, 500 * s}}, StaleStream, 900 * s, true, []StepKind{StepExplicit}},
		{"explicit is never hard-capped", Inputs{Provider: withStale(openai, 900*s), Model: "o3", Stream: true, Agent: Agent{StaleTimeoutHardCap: 300 * s}}, StaleStream, 900 * s, true, nil},
		{"env never hard-capped", Inputs{Provider: openai, Model: "o3", Stream: true, Agent: Agent{StaleTimeoutHardCap: 300 * s}, Env: env(EnvStaleTimeout, "15m")}, StaleStream, 900 * s, true, nil},
		{"env does not touch non-stream", Inputs{Provider: openai, Model: "gpt-4o", Env: env(EnvStaleTimeout, "900")}, StaleNonStream, 90 * s, false, nil},
		{"invalid env ignored", Inputs{Provider: openai, Model: "gpt-4o", Stream: true, Env: env(EnvStaleTimeout, "soon")}, StaleStream, 180 * s, false, nil},
		{"local ceiling from agent", Inputs{Provider: local, Model: "x", Stream: true, Agent: Agent{LocalStreamStaleTimeout: 600 * s}}, StaleStream, 600 * s, false, []StepKind{StepAgent}},
		{"local ceiling capped by budget", Inputs{Provider: local, Model: "x", Stream: true, Run: RunBudget{1000 * s, 0}}, StaleStream, 500 * s, false, []StepKind{StepLocal, StepBudget}},
		{"hard cap", Inputs{Provider: openai, Model: "o3", Stream: true, Agent: Agent{StaleTimeoutHardCap: 300 * s}}, StaleStream, 300 * s, false, []StepKind{StepDefault, StepFloor, StepHardCap}},
		{"budget then hard cap", Inputs{Provider: openai, Model: "o3", Stream: true, Tokens: 120_000, Run: RunBudget{1800 * s, 1000 * s}, Agent: Agent{StaleTimeoutHardCap: 300 * s}}, StaleStream, 300 * s, false, []StepKind{StepDefault, StepTier, StepFloor, StepBudget, StepHardCap}},
		{"stream socket read stays at the table value", Inputs{Provider: openai, Model: "o3", Stream: true}, SocketRead, 120 * s, false, []StepKind{StepDefault}},
		{"non-stream socket read covers the floor", Inputs{Provider: openai, Model: "o3"}, SocketRead, 600 * s, false, []StepKind{StepDefault, StepRaise}},
		{"API call covers a long explicit stale", Inputs{Provider: withStale(openai, 3600*s), Model: "o3"}, APICall, 3600 * s, false, []StepKind{StepDefault, StepRaise}},
		{"first event follows explicit", Inputs{Provider: withStale(openai, 45*s), Model: "o3", Stream: true, API: Responses}, FirstEvent, 45 * s, true, []StepKind{StepFollow}},
		{"first event budget-capped", Inputs{Provider: openai, Model: "o3", Stream: true, API: Responses, Run: RunBudget{200 * s, 100 * s}}, FirstEvent, 60 * s, false, []StepKind{StepDefault, StepBudget}},
		{"drain from agent", Inputs{Provider: openai, Model: "x", Stream: true, Agent: Agent{StreamDrainTimeout: 5 * s}}, Drain, 5 * s, false, []StepKind{StepAgent}},
		{"explicit clamped to max", Inputs{Provider: withStale(openai, 48*time.Hour), Model: "x", Stream: true}, StaleStream, MaxTimeout, true, []StepKind{StepExplicit, StepClamp}},
		{"provider tiers replace defaults", Inputs{Provider: responsesBackend, Model: "gpt-4o", Stream: true, Tokens: 60_000}, StaleStream, 900 * s, false, []StepKind{StepDefault, StepTier}},
		{"provider tiers: 120k → 1200", Inputs{Provider: responsesBackend, Model: "gpt-4o", API: Responses, Tokens: 120_000}, StaleNonStream, 1200 * s, false, []StepKind{StepDefault, StepTier}},
		{"provider tiers: 10k is not above 10k", Inputs{Provider: responsesBackend, Model: "gpt-4o", Stream: true, Tokens: 10_000}, StaleStream, 180 * s, false, []StepKind{StepDefault}},
		{"provider floors extend the table", Inputs{Provider: Provider{ID: "x", BaseURL: "https://x.example/v1", Floors: []Floor{{Slug: "house-thinker", Timeout: 420 * s}}}, Model: "x/house-thinker-v2", Stream: true}, StaleStream, 420 * s, false, nil},
		{"opus without thinking: the chat default", Inputs{Provider: anthropic, Model: "claude-opus-4-5", Stream: true}, StaleStream, 180 * s, false, []StepKind{StepDefault, StepFloor}},
		{"opus with thinking: its floor", Inputs{Provider: anthropic, Model: "claude-opus-4-5", Stream: true, Thinking: true}, StaleStream, 240 * s, false, []StepKind{StepDefault, StepFloor}},
		{"opus thinking variant by name", Inputs{Provider: anthropic, Model: "claude-opus-4-5-thinking", Stream: true}, StaleStream, 240 * s, false, []StepKind{StepDefault, StepFloor}},
		{"opus non-stream without thinking", Inputs{Provider: anthropic, Model: "claude-opus-4-1"}, StaleNonStream, 90 * s, false, []StepKind{StepDefault, StepFloor}},
		{"opus non-stream with thinking", Inputs{Provider: anthropic, Model: "claude-opus-4-1", Thinking: true}, StaleNonStream, 240 * s, false, []StepKind{StepDefault, StepFloor}},
		{"thinking does not move a chat model", Inputs{Provider: openai, Model: "gpt-4o", Stream: true, Thinking: true}, StaleStream, 180 * s, false, []StepKind{StepDefault}},
		{"operator value for the opus slug keeps its condition", Inputs{Provider: Provider{ID: "a", BaseURL: "https://a.example/v1", Floors: []Floor{{Slug: "claude-opus-4", Timeout: 400 * s}}}, Model: "claude-opus-4-5", Stream: true}, StaleStream, 180 * s, false, []StepKind{StepDefault, StepFloor}},
		{"negative settings ignored", Inputs{Provider: withStale(openai, -5*s), Model: "gpt-4o", Stream: true, Run: RunBudget{-1, 0}, Agent: Agent{StaleTimeoutHardCap: -1}}, StaleStream, 180 * s, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Resolve(tt.in)
			v := p.Get(tt.layer)
			if v.Timeout != tt.want {
				t.Errorf("%s = %v, want %v (chain: %s)", tt.layer, v.Timeout, tt.want, v.ChainString())
			}
			if v.Explicit != tt.explicit {
				t.Errorf("%s explicit = %v, want %v", tt.layer, v.Explicit, tt.explicit)
			}
			if tt.chain != nil {
				var kinds []StepKind
				for _, st := range v.Chain {
					kinds = append(kinds, st.Kind)
				}
				if !slices.Equal(kinds, tt.chain) {
					t.Errorf("%s chain kinds = %v, want %v (chain: %s)", tt.layer, kinds, tt.chain, v.ChainString())
				}
			}
			if last := v.Chain[len(v.Chain)-1]; last.Value != v.Timeout {
				t.Errorf("last step %q has %v, value is %v", last.Text, last.Value, v.Timeout)
			}
		})
	}
}

// TestParity is the cron regression: a scheduled job's call and a gateway
// call with the same request, streaming or not, compute the same stale
// timeout (once one path allowed 90 s where its twin allowed 600).
func TestParity(t *testing.T) {
	tok := EstimateTokens(strings.Repeat("y", 120_000)) // 30k tokens
	if tok != 30_000 {
		t.Fatalf("EstimateTokens = %d, want 30000", tok)
	}
	for _, tc := range []struct {
		name    string
		hardCap time.Duration
		want    time.Duration
	}{
		{"no hard cap", 0, 600 * s},
		{"hard cap 300", 300 * s, 300 * s},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agent := Agent{StaleTimeoutHardCap: tc.hardCap}
			paths := map[string]Inputs{
				"gateway streaming":     {Provider: responsesBackend, Model: "gpt-5-codex", API: Responses, Stream: true, Tokens: tok, Agent: agent},
				"gateway non-streaming": {Provider: responsesBackend, Model: "gpt-5-codex", API: Responses, Tokens: tok, Agent: agent},
				"job streaming":         {Provider: responsesBackend, Model: "gpt-5-codex", API: Responses, Stream: true, Tokens: tok, Agent: agent, Run: RunBudget{Total: 1800 * s}},
				"job non-streaming":     {Provider: responsesBackend, Model: "gpt-5-codex", API: Responses, Tokens: tok, Agent: agent, Run: RunBudget{Total: 1800 * s}},
			}
			for name, in := range paths {
				if got := Resolve(in).Stale().Timeout; got != tc.want {
					t.Errorf("%s: stale = %v, want %v", name, got, tc.want)
				}
			}
		})
	}
}

func TestGiveUpThreshold(t *testing.T) {
	tests := []struct {
		name string
		env  func(string) (string, bool)
		want int
		warn bool
	}{
		{"default", nil, 5, false},
		{"env", env(EnvGiveUp, "3"), 3, false},
		{"disabled", env(EnvGiveUp, "0"), 0, false},
		{"invalid", env(EnvGiveUp, "-2"), 5, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Resolve(Inputs{Env: tt.env})
			if p.GiveUp != tt.want {
				t.Errorf("GiveUp = %d, want %d", p.GiveUp, tt.want)
			}
			if got := len(p.Warnings) > 0; got != tt.warn {
				t.Errorf("warnings = %q, want some: %v", p.Warnings, tt.warn)
			}
		})
	}
}

func TestApplies(t *testing.T) {
	tests := []struct {
		name   string
		in     Inputs
		active []Layer
	}{
		{"chat stream", Inputs{Stream: true}, []Layer{SocketRead, StaleStream, Drain}},
		{"responses stream", Inputs{Stream: true, API: Responses}, []Layer{SocketRead, StaleStream, FirstEvent, Drain}},
		{"non-stream", Inputs{}, []Layer{SocketRead, StaleNonStream, APICall}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Resolve(tt.in)
			var got []Layer
			for _, v := range p.Values() {
				if v.Applies {
					got = append(got, v.Layer)
				}
			}
			if len(got) != len(tt.active) {
				t.Fatalf("active layers = %v, want %v", got, tt.active)
			}
			for i := range got {
				if got[i] != tt.active[i] {
					t.Errorf("active layers = %v, want %v", got, tt.active)
				}
			}
		})
	}
}

func TestPlanRendering(t *testing.T) {
	p := Resolve(Inputs{Provider: openai, Model: "openai/o3", Stream: true, Tokens: 120_000, Run: RunBudget{600 * s, 100 * s}})
	text := p.String()
	for _, want := range []string{"stale stream", "250s", "default 180s → context tier >100k: 300s → model floor o3: 600s → budget cap max(60s, 500s remaining / 2): 250s"} {
		if !strings.Contains(text, want) {
			t.Errorf("text plan lacks %q:\n%s", want, text)
		}
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Provider string `json:"provider"`
		Layers   []struct {
			Layer   Layer    `json:"layer"`
			Seconds float64  `json:"seconds"`
			Chain   []string `json:"chain"`
		} `json:"layers"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Provider != "openai" || len(got.Layers) != len(Layers) {
		t.Fatalf("json = %s", b)
	}
	if l := got.Layers[StaleStream]; l.Layer != StaleStream || l.Seconds != 250 || len(l.Chain) != 4 {
		t.Errorf("json stale_stream = %+v, want 250 s with a 4-step chain", l)
	}
}

func TestLayerAndAPIRoundTrip(t *testing.T) {
	for _, l := range Layers {
		b, err := l.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Layer
		if err := back.UnmarshalText(b); err != nil || back != l {
			t.Errorf("layer %v round trip = %v, %v", l, back, err)
		}
	}
	if err := new(Layer).UnmarshalText([]byte("nope")); !errors.Is(err, ErrInvalid) {
		t.Errorf("reading layer nope = %v, want ErrInvalid", err)
	}
	for _, a := range []API{Chat, Responses} {
		b, _ := a.MarshalText()
		var back API
		if err := back.UnmarshalText(b); err != nil || back != a {
			t.Errorf("api %v round trip = %v, %v", a, back, err)
		}
	}
	if _, err := ParseAPI("completions"); err == nil {
		t.Error("ParseAPI(completions) succeeded, want an error")
	}
}

// TestFloorTableDocumentsEntries: every built-in floor says which calls it
// covers and where in the seed it comes from; the Opus floor covers
// thinking calls only, as the seed's row says.
func TestFloorTableDocumentsEntries(t *testing.T) {
	for _, f := range builtinFloors() {
		if !strings.HasPrefix(f.Source, "seed 004, floors table, ") {
			t.Errorf("floor %s: source %q does not name the seed's row", f.Slug, f.Source)
		}
		want := Always
		if strings.HasPrefix(f.Slug, "claude-opus-") {
			want = ThinkingOnly
		}
		if f.When != want {
			t.Errorf("floor %s: condition %s, want %s", f.Slug, f.When, want)
		}
	}
}

func TestConditionRoundTrip(t *testing.T) {
	for _, c := range []Condition{Always, ThinkingOnly} {
		b, err := c.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var got Condition
		if err := got.UnmarshalText(b); err != nil || got != c {
			t.Errorf("round trip of %s: got %s, %v", c, got, err)
		}
	}
	if err := new(Condition).UnmarshalText([]byte("sometimes")); !errors.Is(err, ErrInvalid) {
		t.Errorf("reading condition sometimes = %v, want ErrInvalid", err)
	}
}

func TestThinkingModel(t *testing.T) {
	tests := []struct {
		model string
		want  bool
	}{
		{"claude-opus-4-5-thinking", true},
		{"anthropic/claude-opus-4.1:thinking", true},
		{"Qwen/Qwen3-235B-A22B-Thinking-2507", true},
		{"thinking/claude-opus-4-5", false}, // a vendor named so is not a variant
		{"claude-opus-4-5-rethinking", false},
		{"claude-opus-4-5", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := ThinkingModel(tt.model); got != tt.want {
			t.Errorf("ThinkingModel(%q) = %v, want %v", tt.model, got, tt.want)
		}
	}
}
