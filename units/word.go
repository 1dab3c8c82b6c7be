package units

import (
	"fmt"
	"slices"
)

// ParseWord is the strict parse of a word type (an enum written as its
// plain string: Ownership, Role, Type, Restart, ledger.State): s as a T
// when it is one of words, else an error `unknown WHAT "s": want WANT`.
// want is written by the caller because it may name a word otherwise than
// as it is spelled (the empty State is "none") or leave one unsaid (the
// empty owner Role).
func ParseWord[T ~string](what, want, s string, words ...T) (T, error) {
	if w := T(s); slices.Contains(words, w) {
		return w, nil
	}
	return "", fmt.Errorf("unknown %s %s: want %s", what, excerpt(s), want)
}

// UnmarshalWord is a word type's UnmarshalText: *dst is parse(text), and
// is left as it was when parse fails.
func UnmarshalWord[T ~string](dst *T, text []byte, parse func(string) (T, error)) error {
	v, err := parse(string(text))
	if err != nil {
		return err
	}
	*dst = v
	return nil
}
