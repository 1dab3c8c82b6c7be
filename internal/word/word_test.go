package word

import (
	"errors"
	"strings"
	"testing"
)

type color string

type level int

var errBad = errors.New("bad")

var (
	colors = Strings[color]("color", "", "red", "blue")
	levels = Ints[level]("level", "level", "", "low", "high").Wrap(errBad)
)

// TestTable: every word parses to its value and back, an unknown word is
// an *Error that says what it takes, and an int enum's empty name is no
// word.
func TestTable(t *testing.T) {
	for _, w := range []string{"", "red", "blue"} {
		v, err := colors.Parse(w)
		if err != nil || colors.Name(v) != w {
			t.Errorf("colors.Parse(%q) = %q, %v; want %q, nil", w, v, err, w)
		}
	}
	for _, w := range []string{"low", "high"} {
		v, err := levels.Parse(w)
		b, merr := levels.Marshal(v)
		if err != nil || merr != nil || string(b) != w {
			t.Errorf("levels: %q parses to %d (%v), written %q (%v)", w, v, err, b, merr)
		}
	}
	_, err := colors.Parse("green")
	var we *Error
	if !errors.As(err, &we) || we.Word != "green" || err.Error() != `unknown color "green": want red or blue` {
		t.Errorf("colors.Parse(green) = %v, want an *Error listing red or blue", err)
	}
	if _, err := levels.Parse(""); !errors.Is(err, errBad) {
		t.Errorf(`levels.Parse("") = %v, want errBad`, err)
	}
	for _, v := range []level{0, 3, -1} {
		if b, err := levels.Marshal(v); !errors.Is(err, errBad) {
			t.Errorf("levels.Marshal(%d) = %q, %v; want errBad", v, b, err)
		}
	}
	if got := levels.Name(9); got != "level(9)" {
		t.Errorf("levels.Name(9) = %q, want level(9)", got)
	}
	var c color = "red"
	if err := colors.Unmarshal(&c, []byte("green")); err == nil || c != "red" {
		t.Errorf("Unmarshal(green) = %v, left %q; want an error, red kept", err, c)
	}
	long := strings.Repeat("x", 300)
	if _, err := colors.Parse(long); len(err.Error()) > 150 || !strings.Contains(err.Error(), "(300 bytes)") {
		t.Errorf("a 300-byte word: %q, want it cut with its size", err)
	}
}
