package timeouts

import (
	"errors"
	"fmt"
	"testing"
)

// TestWords: every int enum's words, its form out of range, and the
// errors of a value out of range and of an unknown word, as they were
// before the enums shared their table.
func TestWords(t *testing.T) {
	tests := []struct {
		name  string
		str   func() []string // the words of each value, then of one out of range
		want  []string
		parse func(string) error
		bad   string
	}{
		{"layer", func() []string {
			return []string{SocketRead.String(), Drain.String(), Layer(9).String()}
		}, []string{"socket_read", "drain", "Layer(9)"},
			func(s string) error { var l Layer; return l.UnmarshalText([]byte(s)) },
			`unknown layer "nope": want socket_read, stale_stream, stale_non_stream, first_event, api_call or drain`},
		{"api", func() []string { return []string{Chat.String(), Responses.String(), API(-1).String()} },
			[]string{"chat", "responses", "API(-1)"},
			func(s string) error { _, err := ParseAPI(s); return err },
			`unknown api "nope": want chat or responses`},
		{"condition", func() []string { return []string{Always.String(), ThinkingOnly.String(), Condition(2).String()} },
			[]string{"always", "thinking", "Condition(2)"},
			func(s string) error { var c Condition; return c.UnmarshalText([]byte(s)) },
			`unknown floor condition "nope": want always or thinking`},
		{"scope", func() []string {
			return []string{ScopeNone.String(), ScopeModel.String(), ScopeProvider.String(), Scope(3).String()}
		}, []string{"", "model", "provider", "Scope(3)"}, nil, ""},
		{"reset", func() []string {
			return []string{ResetModelChange.String(), ResetFallback.String(), ResetNewTurn.String(), ResetReason(7).String()}
		}, []string{"model change", "fallback activation", "new turn", "ResetReason(7)"}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.str(); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if tt.parse == nil {
				return
			}
			err := tt.parse("nope")
			if !errors.Is(err, ErrInvalid) || err.Error() != tt.bad {
				t.Errorf("parse(nope) = %v, want %s", err, tt.bad)
			}
		})
	}
	for _, v := range []interface{ MarshalText() ([]byte, error) }{Layer(9), API(2), Condition(-1)} {
		if b, err := v.MarshalText(); err == nil {
			t.Errorf("%v.MarshalText() = %q, want an error", v, b)
		}
	}
}
