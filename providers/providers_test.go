package providers

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/timeouts"
	"github.com/hermes-units/hermes/units"
)

const config = `
agent:
  run_budget_seconds: 1800
  stale_timeout_hard_cap: 300
providers:
  openai:
    base_url: https://api.openai.com/v1
    api_key_env: TEST_OPENAI_KEY
    models:
      o3: {stale_timeout_seconds: 120}
  openrouter:
    base_url: https://openrouter.ai/api/v1
    api_key_env: TEST_OPENROUTER_KEY
    models:
      openai/o3-mini: {}
      deepseek/deepseek-r1: {}
  codex:
    base_url: https://relay.example.com/v1
    tiers:
      - {above_tokens: 10000, seconds: 600}
      - {above_tokens: 50000, seconds: 900}
    floors:
      - {slug: house-thinker, seconds: 420}
  local:
    base_url: http://127.0.0.1:8080/v1
    stale_timeout_seconds: 900
`

func load(t *testing.T) *units.Config {
	t.Helper()
	cfg, err := units.ParseConfig("hermes.yaml", t.TempDir(), []byte(config))
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	return cfg
}

// newSet is the Set of the test config and specs, which must build.
func newSet(t *testing.T, specs ...*units.Spec) *Set {
	t.Helper()
	set, err := New(load(t), specs...)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func TestRoute(t *testing.T) {
	set := newSet(t)
	tests := []struct {
		model   string
		want    Route
		wantErr error
	}{
		{"o3", Route{"openai", "o3"}, nil},                                         // listed by openai
		{"openai/o3-mini", Route{"openrouter", "openai/o3-mini"}, nil},             // listed whole by openrouter
		{"DeepSeek/DeepSeek-R1", Route{"openrouter", "deepseek/deepseek-r1"}, nil}, // case-insensitive
		{"openai/gpt-4o", Route{"openai", "gpt-4o"}, nil},                          // PROVIDER/MODEL
		{"local/qwq-32b", Route{"local", "qwq-32b"}, nil},
		{"codex/team/model", Route{"codex", "team/model"}, nil},
		{"gpt-4o", Route{}, ErrUnknownModel},
		{"mistral/large", Route{}, ErrUnknownModel},
		{"openai/", Route{}, ErrUnknownModel},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			got, err := set.Route(tt.model)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Route(%q) error = %v, want %v", tt.model, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("Route(%q) = %+v, want %+v", tt.model, got, tt.want)
			}
		})
	}
}

func TestRouteSingleProviderAndAmbiguity(t *testing.T) {
	one, err := New(&units.Config{Providers: map[string]units.Provider{"only": {BaseURL: "http://llama:8080"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := one.Route("anything"); err != nil || got != (Route{"only", "anything"}) {
		t.Errorf("single provider: Route = %+v, %v, want only/anything", got, err)
	}
	two, err := New(&units.Config{Providers: map[string]units.Provider{
		"a": {Models: map[string]units.ProviderModel{"m": {}}},
		"b": {Models: map[string]units.ProviderModel{"m": {}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := two.Route("m"); !errors.Is(err, ErrUnknownModel) {
		t.Errorf("model listed twice: Route error = %v, want ErrUnknownModel", err)
	}
	if got, err := two.Route("b/m"); err != nil || got != (Route{"b", "m"}) {
		t.Errorf("Route(b/m) = %+v, %v, want b/m", got, err)
	}
}

func TestAPIKey(t *testing.T) {
	set := newSet(t)
	envs := map[string]string{"TEST_OPENAI_KEY": " sk-test \n", "TEST_OPENROUTER_KEY": ""}
	lookup := func(k string) (string, bool) { v, ok := envs[k]; return v, ok }
	tests := []struct {
		id      string
		want    string
		wantErr error
	}{
		{"openai", "sk-test", nil},
		{"openrouter", "", ErrNoAPIKey}, // set but empty
		{"local", "", nil},              // no api_key_env: no key needed
		{"nope", "", ErrUnknownProvider},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			got, err := set.APIKey(tt.id, lookup)
			if !errors.Is(err, tt.wantErr) || got != tt.want {
				t.Errorf("APIKey(%q) = %q, %v, want %q, %v", tt.id, got, err, tt.want, tt.wantErr)
			}
		})
	}
	_, err := set.APIKey("openrouter", nil)
	var mk *MissingKeyError
	if !errors.As(err, &mk) || mk.Env != "TEST_OPENROUTER_KEY" || mk.Source != "providers.openrouter" {
		t.Errorf("APIKey error = %#v, want a MissingKeyError naming TEST_OPENROUTER_KEY", err)
	}
}

func TestUnknownProvider(t *testing.T) {
	set := newSet(t)
	_, err := set.Inputs("anthropic", Call{Model: "x"})
	var up *UnknownProviderError
	if !errors.As(err, &up) {
		t.Fatalf("Inputs(anthropic) error = %v, want *UnknownProviderError", err)
	}
	if want := []string{"codex", "local", "openai", "openrouter"}; !slices.Equal(up.Known, want) {
		t.Errorf("Known = %v, want %v", up.Known, want)
	}
}

// TestPlans checks the conversion end to end: the YAML settings reach the
// resolver with their provenance.
func TestPlans(t *testing.T) {
	tokens30k := 30_000
	spec := &units.Spec{Name: "llama", File: "/u/llama.yaml", Provider: &units.Provider{ID: "unit-llama", BaseURL: "http://127.0.0.1:9000/v1", StaleTimeout: 600 * time.Second}}
	set := newSet(t, spec, &units.Spec{Name: "web"})
	tests := []struct {
		name      string
		id        string
		call      Call
		want      time.Duration
		wantChain string
	}{
		{"model explicit", "openai", Call{Model: "o3", Stream: true}, 120 * time.Second,
			"explicit: providers.openai.models.o3.stale_timeout_seconds = 120s → model floor o3 (600s) not applied: explicit wins"},
		{"provider explicit on a local endpoint", "local", Call{Model: "qwq-32b", Stream: true}, 900 * time.Second,
			"explicit: providers.local.stale_timeout_seconds = 900s"},
		{"unit provider", "unit-llama", Call{Model: "qwq-32b"}, 600 * time.Second,
			"explicit: llama.yaml provider.stale_timeout_seconds = 600s"},
		{"provider tiers then hard cap, streaming", "codex", Call{Model: "gpt-5-codex", Stream: true, API: timeouts.Responses, Tokens: tokens30k}, 300 * time.Second,
			"default 180s → context tier >10k (providers.codex.tiers): 600s → hard cap (agent.stale_timeout_hard_cap): 300s"},
		{"provider tiers then hard cap, non-streaming job", "codex", Call{Model: "gpt-5-codex", API: timeouts.Responses, Tokens: tokens30k, Run: timeouts.RunBudget{Total: 850 * time.Second, Spent: 10 * time.Second}}, 300 * time.Second,
			"default 90s → context tier >10k (providers.codex.tiers): 600s → budget cap max(60s, 840s remaining / 2): 420s → hard cap (agent.stale_timeout_hard_cap): 300s"},
		{"configured floor", "codex", Call{Model: "house-thinker-2", Stream: true}, 300 * time.Second,
			"default 180s → model floor house-thinker: 420s → hard cap (agent.stale_timeout_hard_cap): 300s"},
		{"agent run budget by default", "openrouter", Call{Model: "deepseek/deepseek-r1", Stream: true, Env: func(string) (string, bool) { return "", false }}, 300 * time.Second,
			"default 180s → model floor deepseek-r1: 600s → hard cap (agent.stale_timeout_hard_cap): 300s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := set.Plan(tt.id, tt.call)
			if err != nil {
				t.Fatal(err)
			}
			v := p.Stale()
			if v.Timeout != tt.want || v.ChainString() != tt.wantChain {
				t.Errorf("stale = %v (%s), want %v (%s)", v.Timeout, v.ChainString(), tt.want, tt.wantChain)
			}
		})
	}
	in, _ := set.Inputs("openrouter", Call{Model: "x"})
	if in.Run != (timeouts.RunBudget{Total: 1800 * time.Second}) {
		t.Errorf("default run budget = %+v, want agent.run_budget_seconds with nothing spent", in.Run)
	}
}

func TestDuplicateUnitProvider(t *testing.T) {
	spec := &units.Spec{Name: "dup", File: "/u/dup.yaml", Provider: &units.Provider{ID: "openai", BaseURL: "http://127.0.0.1:1/v1"}}
	if _, err := New(load(t), spec); !errors.Is(err, ErrDuplicate) {
		t.Errorf("New with a clashing unit provider: error = %v, want ErrDuplicate", err)
	}
}

func TestWith(t *testing.T) {
	set := newSet(t)
	local := set.With(units.Provider{ID: "openai", BaseURL: "http://127.0.0.1:1/v1"}, "ignored")
	p, _ := local.Plan("openai", Call{Model: "gpt-4o", Stream: true})
	if !p.Local || p.Stale().Timeout != 300*time.Second { // local 900, hard cap 300
		t.Errorf("overridden openai: local %v, stale %v, want local and 5m0s", p.Local, p.Stale().Timeout)
	}
	if orig, _ := set.Get("openai"); orig.BaseURL != "https://api.openai.com/v1" {
		t.Errorf("With changed the original set: base URL %q", orig.BaseURL)
	}
	added := set.With(units.Provider{ID: "explore", BaseURL: "http://gpu-box.local:8000"}, "--base-url provider explore")
	if ids := added.IDs(); !slices.Contains(ids, "explore") || len(ids) != 5 {
		t.Errorf("IDs after With = %v", ids)
	}
}

// TestAPIKeyFile: a provider's api_key_file (a mounted Secret) is read at
// each call, so a key the kubelet rotates in the volume is taken at the
// next call; a missing or empty file is a KeyFileError naming it.
func TestAPIKeyFile(t *testing.T) {
	dir := t.TempDir()
	yml := "providers:\n  openai:\n    base_url: https://api.openai.com/v1\n    api_key_file: secret/OPENAI_API_KEY\n"
	cfg, err := units.ParseConfig("hermes.yaml", dir, []byte(yml))
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	set, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "secret", "OPENAI_API_KEY")
	var kf *KeyFileError
	if _, err := set.APIKey("openai", nil); !errors.As(err, &kf) || kf.File != path || kf.Err == nil || !errors.Is(err, ErrNoAPIKey) {
		t.Errorf("APIKey with no file = %v, want a KeyFileError naming %s", err, path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"sk-one", "sk-two"} {
		if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := set.APIKey("openai", nil); got != key || err != nil {
			t.Errorf("APIKey = %q, %v, want %q (the file's key now)", got, err, key)
		}
	}
	if err := os.WriteFile(path, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := set.APIKey("openai", nil); !errors.As(err, &kf) || kf.Err != nil || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("APIKey with an empty file = %v, want a KeyFileError saying it is empty", err)
	}
	both := "providers:\n  openai:\n    base_url: https://api.openai.com/v1\n    api_key_env: K\n    api_key_file: /k\n"
	if _, err := units.ParseConfig("hermes.yaml", dir, []byte(both)); err == nil || !strings.Contains(err.Error(), "keep one of the two") {
		t.Errorf("api_key_env and api_key_file together: %v, want refused", err)
	}
}
