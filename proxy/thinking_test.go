package proxy

import (
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/hermes-units/hermes/units"
)

// slowScale runs 120 s of socket read in 600 ms: keep-alives every tick
// stay well inside it on a loaded machine, so the stale layer is the one
// that fires.
const slowScale = 0.005

// TestThinkingFloor: the 240 s Opus floor covers thinking calls only, as
// the request or the model id says; the same model without thinking keeps
// the 180 s default. The upstream never sends content, so the cut names
// the value the proxy armed.
func TestThinkingFloor(t *testing.T) {
	models := map[string]units.ProviderModel{"claude-opus-4-5": {}, "claude-opus-4-5-thinking": {}}
	tests := []struct {
		name  string
		model string
		opts  []option.RequestOption
		want  []string
	}{
		{name: "no thinking", model: "claude-opus-4-5",
			want: []string{"after 180s", "model floor claude-opus-4 (240s) covers thinking calls only"}},
		{name: "reasoning_effort", model: "claude-opus-4-5", opts: []option.RequestOption{option.WithJSONSet("reasoning_effort", "high")},
			want: []string{"after 240s", "model floor claude-opus-4 (thinking calls): 240s"}},
		{name: "reasoning_effort none", model: "claude-opus-4-5", opts: []option.RequestOption{option.WithJSONSet("reasoning_effort", "none")},
			want: []string{"after 180s"}},
		{name: "anthropic thinking", model: "claude-opus-4-5", opts: []option.RequestOption{option.WithJSONSet("thinking", map[string]any{"type": "enabled", "budget_tokens": 2048})},
			want: []string{"after 240s", "model floor claude-opus-4 (thinking calls): 240s"}},
		{name: "anthropic thinking disabled", model: "claude-opus-4-5", opts: []option.RequestOption{option.WithJSONSet("thinking", map[string]any{"type": "disabled"})},
			want: []string{"after 180s"}},
		{name: "reasoning object", model: "claude-opus-4-5", opts: []option.RequestOption{option.WithJSONSet("reasoning", map[string]any{"max_tokens": 2048})},
			want: []string{"after 240s"}},
		{name: "reasoning disabled", model: "claude-opus-4-5", opts: []option.RequestOption{option.WithJSONSet("reasoning", map[string]any{"enabled": false})},
			want: []string{"after 180s"}},
		{name: "thinking variant by name", model: "claude-opus-4-5-thinking",
			want: []string{"after 240s", "model floor claude-opus-4 (thinking calls): 240s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, setup{models: models, scale: slowScale})
			h.up.play(keepAlives)
			c := h.client("/v1/", tt.opts...)
			_, err := stream(t, c, tt.model)
			msg := errMessage(t, err)
			says(t, msg, tt.want...)
			h.up.waitExit(t, 1)
		})
	}
}

// TestThinkingFloorResponses: a Responses call with reasoning is a
// thinking call, with the typed parameter of the SDK.
func TestThinkingFloorResponses(t *testing.T) {
	h := newHarness(t, setup{models: map[string]units.ProviderModel{"claude-opus-4-5": {}}, scale: slowScale})
	h.up.play(keepAlives)
	c := h.client("/v1/")
	for _, tt := range []struct {
		name      string
		reasoning shared.ReasoningParam
		want      string
	}{
		{"with reasoning", shared.ReasoningParam{Effort: shared.ReasoningEffortHigh}, "after 240s"},
		{"without", shared.ReasoningParam{}, "after 180s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := c.Responses.NewStreaming(t.Context(), responses.ResponseNewParams{
				Model: "claude-opus-4-5", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}, Reasoning: tt.reasoning,
			})
			for s.Next() {
			}
			err := s.Err()
			s.Close()
			says(t, errMessage(t, err), tt.want)
			h.up.waitExit(t, 1)
		})
	}
}
