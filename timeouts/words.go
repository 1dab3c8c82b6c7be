package timeouts

import (
	"fmt"
	"strings"
)

// words names the values of an int enum (Layer, API, Condition, Scope,
// ResetReason), by value from 0: the one table its String, and where it
// has them MarshalText, UnmarshalText and Parse, read, so that no value is
// written that does not parse back. kind is the type's name, for String's
// out-of-range form ("Layer(9)"); what names a value in errors ("layer").
type words[T ~int] struct {
	kind, what string
	names      []string
}

func (w words[T]) valid(v T) bool { return v >= 0 && int(v) < len(w.names) }

// name is v's word, or kind(v) for a value out of range.
func (w words[T]) name(v T) string {
	if !w.valid(v) {
		return fmt.Sprintf("%s(%d)", w.kind, int(v))
	}
	return w.names[v]
}

// marshal is v's word, or an error for a value out of range.
func (w words[T]) marshal(v T) ([]byte, error) {
	if !w.valid(v) {
		return nil, fmt.Errorf("timeouts: invalid %s %d", w.what, int(v))
	}
	return []byte(w.names[v]), nil
}

// parse is the value named s; any other word is an error wrapping
// ErrInvalid that lists the words.
func (w words[T]) parse(s string) (T, error) {
	for i, n := range w.names {
		if s == n {
			return T(i), nil
		}
	}
	want := "one of " + strings.Join(w.names, ", ")
	if len(w.names) == 2 {
		want = w.names[0] + " or " + w.names[1]
	}
	return 0, fmt.Errorf("%w: %s %q (want %s)", ErrInvalid, w.what, s, want)
}

// unmarshal sets *dst to the value named by text; it is left as it was
// when text names none.
func (w words[T]) unmarshal(dst *T, text []byte) error {
	v, err := w.parse(string(text))
	if err != nil {
		return err
	}
	*dst = v
	return nil
}
