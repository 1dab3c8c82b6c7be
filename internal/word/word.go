// Package word is the one table of an enum's words, for the string enums
// written as their plain word (units.Type, ledger.State, supervisor.Mode,
// control.HealthState) and the int enums named by one (timeouts.Layer,
// events.Kind): it parses strictly, names a value, and reads and writes it
// as text, so that no value is written that does not parse back and a word
// this build does not know is an error where it is read. It imports only
// the standard library.
package word

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Table holds the words of an enum T, in their order.
type Table[T comparable] struct {
	what  string // a value's name in errors: "ownership"
	want  string // the words as an error lists them
	err   error  // the sentinel a parse error wraps; nil for none
	vals  []T
	names []string
	other func(T) string // the form of a value not in the table
	holes bool           // an empty name is no word (Ints): never parsed nor written
}

// Strings is the table of a string enum whose words are its values. A
// parse error lists the non-empty ones.
func Strings[T ~string](what string, vals ...T) *Table[T] {
	names := make([]string, len(vals))
	for i, v := range vals {
		names[i] = string(v)
	}
	return newTable(what, vals, names, func(v T) string { return string(v) })
}

// Ints is the table of an int enum whose values, from 0, are named by
// names. A value out of range is named kind(v): "Layer(9)". An empty name
// is a value's Name but no word: Parse never yields it, Marshal refuses it
// (the zero Kind of events, which names no event).
func Ints[T ~int](kind, what string, names ...string) *Table[T] {
	vals := make([]T, len(names))
	for i := range vals {
		vals[i] = T(i)
	}
	t := newTable(what, vals, names, func(v T) string { return fmt.Sprintf("%s(%d)", kind, int(v)) })
	t.holes = true
	return t
}

func newTable[T comparable](what string, vals []T, names []string, other func(T) string) *Table[T] {
	said := slices.DeleteFunc(slices.Clone(names), func(s string) bool { return s == "" })
	want := strings.Join(said, ", ")
	if n := len(said); n > 1 {
		want = strings.Join(said[:n-1], ", ") + " or " + said[n-1]
	}
	return &Table[T]{what: what, want: want, vals: vals, names: names, other: other}
}

// Want replaces the words a parse error lists, for a table that names a
// word otherwise than as it is spelled (the empty ledger.State is "none").
func (t *Table[T]) Want(want string) *Table[T] {
	t.want = want
	return t
}

// Wrap makes every parse error wrap err, the enum package's sentinel.
func (t *Table[T]) Wrap(err error) *Table[T] {
	t.err = err
	return t
}

// Parse is the value named s, or an *Error.
func (t *Table[T]) Parse(s string) (T, error) {
	if i := slices.Index(t.names, s); i >= 0 && !(t.holes && s == "") {
		return t.vals[i], nil
	}
	var zero T
	return zero, &Error{What: t.what, Word: s, Want: t.want, Err: t.err}
}

// Words are the table's words in order, the empty one left out: what a
// schema's enum lists.
func (t *Table[T]) Words() []string {
	return slices.DeleteFunc(slices.Clone(t.names), func(s string) bool { return s == "" })
}

// Name is v's word, or its other form when v is not in the table.
func (t *Table[T]) Name(v T) string {
	if i := slices.Index(t.vals, v); i >= 0 {
		return t.names[i]
	}
	return t.other(v)
}

// Marshal is v's word for MarshalText, or an error (wrapping the table's
// sentinel) when v has none.
func (t *Table[T]) Marshal(v T) ([]byte, error) {
	if i := slices.Index(t.vals, v); i >= 0 && !(t.holes && t.names[i] == "") {
		return []byte(t.names[i]), nil
	}
	if t.err != nil {
		return nil, fmt.Errorf("%w: %s has no word", t.err, t.other(v))
	}
	return nil, fmt.Errorf("%s %s has no word", t.what, t.other(v))
}

// Unmarshal is UnmarshalText: *dst is the value text names, and is left
// as it was when text names none.
func (t *Table[T]) Unmarshal(dst *T, text []byte) error {
	v, err := t.Parse(string(text))
	if err == nil {
		*dst = v
	}
	return err
}

// Error is a word that no value of an enum has: what the value names, the
// word (quoted and cut by Quote), and the words the enum takes.
type Error struct {
	What, Word, Want string
	Err              error // the enum package's sentinel, or nil
}

func (e *Error) Error() string {
	return fmt.Sprintf("unknown %s %s: want %s", e.What, Quote(e.Word), e.Want)
}

func (e *Error) Unwrap() error { return e.Err }

// Quote quotes a value read from a file or the wire for an error message,
// Go-escaped (control bytes and escape sequences print as \x1b, never
// reach a terminal raw), and cut after 64 runes with the full size: a
// 270 KB scalar of garbage is named by its start and its size, not echoed
// into every status.
func Quote(s string) string {
	if r := []rune(s); len(r) > 64 {
		return strconv.Quote(string(r[:64])) + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return strconv.Quote(s)
}
