package proxy

import (
	"testing"

	"github.com/hermes-units/hermes/internal/sse"
	"github.com/hermes-units/hermes/timeouts"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		api  timeouts.API
		typ  string
		data string
		want progress
	}{
		{"content", timeouts.Chat, "", `{"choices":[{"delta":{"content":"hi"}}]}`, content},
		{"content with spaces", timeouts.Chat, "", `{"choices":[{"delta":{"content" : "hi"}}]}`, content},
		{"empty content", timeouts.Chat, "", `{"choices":[{"delta":{"content":""},"finish_reason":null}]}`, keepAlive},
		{"null content", timeouts.Chat, "", `{"choices":[{"delta":{"content":null}}]}`, keepAlive},
		{"role only", timeouts.Chat, "", `{"choices":[{"delta":{"role":"assistant"}}]}`, keepAlive},
		{"usage only", timeouts.Chat, "", `{"choices":[],"usage":{"prompt_tokens":3}}`, keepAlive},
		{"reasoning_content", timeouts.Chat, "", `{"choices":[{"delta":{"reasoning_content":"hmm"}}]}`, content},
		{"reasoning", timeouts.Chat, "", `{"choices":[{"delta":{"reasoning":"hmm"}}]}`, content},
		{"tool call", timeouts.Chat, "", `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]}`, content},
		{"empty tool calls", timeouts.Chat, "", `{"choices":[{"delta":{"tool_calls":[ ]}}]}`, keepAlive},
		{"finish", timeouts.Chat, "", `{"choices":[{"delta":{},"finish_reason":"stop"}]}`, content},
		{"escaped key in text", timeouts.Chat, "", `{"choices":[{"delta":{"role":"x \"content\":\"y\""}}]}`, keepAlive},
		{"done", timeouts.Chat, "", `[DONE]`, terminal},
		{"provider error", timeouts.Chat, "", `{"error":{"message":"overloaded"}}`, failed},
		{"responses created", timeouts.Responses, "response.created", `{"type":"response.created"}`, keepAlive},
		{"responses in progress from data", timeouts.Responses, "", `{"type":"response.in_progress"}`, keepAlive},
		{"responses text delta", timeouts.Responses, "response.output_text.delta", `{}`, content},
		{"responses reasoning delta", timeouts.Responses, "", `{"type":"response.reasoning_summary_text.delta","delta":"x"}`, content},
		{"responses tool delta", timeouts.Responses, "response.function_call_arguments.delta", `{}`, content},
		{"responses keepalive", timeouts.Responses, "keepalive", `{}`, keepAlive},
		{"responses completed", timeouts.Responses, "response.completed", `{}`, terminal},
		{"responses failed", timeouts.Responses, "response.failed", `{}`, failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := classify(tt.api, sse.Piece{Kind: sse.Event, Type: tt.typ, Data: []byte(tt.data)})
			if got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

// FuzzHasValue: the byte scanner never panics, and finds a non-empty
// string value it is given.
func FuzzHasValue(f *testing.F) {
	for _, s := range []string{`{"content":"x"}`, `{"content":""}`, `{"a":{"content" : [1]}}`, `"content"`, `{"content":`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		hasValue(b, `"content"`)
		stringField(b, "type")
		if !hasValue(append([]byte(`{"content":"x",`), b...), `"content"`) {
			t.Errorf("missed a leading non-empty content")
		}
	})
}
