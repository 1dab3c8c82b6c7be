package proxy

import (
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/timeouts"
)

// TestCutErrorText checks that each cut names the layer, the value, the
// chain and the setting to change, for every kind of provenance.
func TestCutErrorText(t *testing.T) {
	cloud := timeouts.Provider{ID: "openai", BaseURL: "https://api.openai.com/v1"}
	tests := []struct {
		name  string
		in    timeouts.Inputs
		layer timeouts.Layer
		want  []string
	}{
		{"implicit chat stream", timeouts.Inputs{Provider: cloud, Model: "gpt-4o", Stream: true}, timeouts.StaleStream,
			[]string{"stale stream timeout fired after 180s of silence", "(default 180s)", "raise providers.openai.models.gpt-4o.stale_timeout_seconds or set HERMES_STREAM_STALE_TIMEOUT"}},
		{"floored reasoning model", timeouts.Inputs{Provider: cloud, Model: "o3", Stream: true}, timeouts.StaleStream,
			[]string{"after 600s", "default 180s → model floor o3: 600s"}},
		{"explicit provider value", timeouts.Inputs{Provider: timeouts.Provider{ID: "local", BaseURL: "http://gpu.example.com", StaleTimeout: 900 * time.Second}, Model: "qwq", Stream: true}, timeouts.StaleStream,
			[]string{"after 900s", "explicit: providers.local.stale_timeout_seconds = 900s", "raise providers.local.stale_timeout_seconds"}},
		{"env", timeouts.Inputs{Provider: cloud, Model: "gpt-4o", Stream: true, Env: func(k string) (string, bool) { return "150", k == timeouts.EnvStaleTimeout }}, timeouts.StaleStream,
			[]string{"after 150s", "raise HERMES_STREAM_STALE_TIMEOUT"}},
		{"budget cap", timeouts.Inputs{Provider: cloud, Model: "o3", Stream: true, Run: timeouts.RunBudget{Total: 600 * time.Second, Spent: 100 * time.Second}}, timeouts.StaleStream,
			[]string{"after 250s", "budget cap", "give the job a larger run_budget_seconds"}},
		{"hard cap", timeouts.Inputs{Provider: cloud, Model: "o3", Stream: true, Agent: timeouts.Agent{StaleTimeoutHardCap: 300 * time.Second}}, timeouts.StaleStream,
			[]string{"after 300s", "raise agent.stale_timeout_hard_cap"}},
		{"local endpoint", timeouts.Inputs{Provider: timeouts.Provider{ID: "llama", BaseURL: "http://127.0.0.1:8080/v1"}, Model: "qwen3-8b", Stream: true}, timeouts.StaleStream,
			[]string{"after 900s", "raise agent.local_stream_stale_timeout or providers.llama.models.qwen3-8b.stale_timeout_seconds"}},
		{"non-stream", timeouts.Inputs{Provider: cloud, Model: "gpt-4o"}, timeouts.StaleNonStream,
			[]string{"stale non-stream timeout fired: provider openai did not start answering within 90s", "raise providers.openai.models.gpt-4o.stale_timeout_seconds"}},
		{"first event", timeouts.Inputs{Provider: cloud, Model: "gpt-4o", Stream: true, API: timeouts.Responses}, timeouts.FirstEvent,
			[]string{"first event timeout fired", "within 120s"}},
		{"socket read", timeouts.Inputs{Provider: cloud, Model: "gpt-4o", Stream: true}, timeouts.SocketRead,
			[]string{"socket read timeout fired after 120s with no bytes", "check that https://api.openai.com/v1 is reachable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := timeouts.Resolve(tt.in)
			e := &CutError{Layer: tt.layer, Value: plan.Get(tt.layer), Provider: tt.in.Provider.ID, Model: tt.in.Model,
				BaseURL: tt.in.Provider.BaseURL, Connected: true, Setting: staleSetting(tt.in.Provider, tt.in.Model), Scale: 1}
			msg := e.Error()
			for _, s := range tt.want {
				if !strings.Contains(msg, s) {
					t.Errorf("got %q, want it to contain %q", msg, s)
				}
			}
			if strings.Contains(msg, "scaled") {
				t.Errorf("got %q: a real-time cut must not mention scaling", msg)
			}
		})
	}
}
