package proxy

import "testing"

func TestRequestThinking(t *testing.T) {
	tests := []struct {
		body string
		want bool
	}{
		{`{"model":"m"}`, false},
		{`{"model":"m","thinking":{"type":"enabled","budget_tokens":1024}}`, true},
		{`{"model":"m","thinking":{"type":"adaptive"}}`, true},
		{`{"model":"m","thinking":{"type":"disabled"}}`, false},
		{`{"model":"m","thinking":true}`, true},
		{`{"model":"m","thinking":false}`, false},
		{`{"model":"m","thinking":null}`, false},
		{`{"model":"m","thinking":"yes"}`, false},
		{`{"model":"m","reasoning_effort":"high"}`, true},
		{`{"model":"m","reasoning_effort":"minimal"}`, true},
		{`{"model":"m","reasoning_effort":"none"}`, false},
		{`{"model":"m","reasoning_effort":""}`, false},
		{`{"model":"m","reasoning":{"effort":"medium","summary":"auto"}}`, true},
		{`{"model":"m","reasoning":{"effort":"none"}}`, false},
		{`{"model":"m","reasoning":{"enabled":false}}`, false},
		{`{"model":"m","reasoning":{"max_tokens":2000}}`, true},
		{`{"model":"m","reasoning":{}}`, true},
		{`{"model":"m","reasoning":null}`, false},
		{`{"model":"m","reasoning":[1]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			r, err := parseRequest([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if got := r.thinking(); got != tt.want {
				t.Errorf("thinking() = %v, want %v", got, tt.want)
			}
		})
	}
}
