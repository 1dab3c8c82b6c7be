package main

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"
)

// Text that hermesctl prints for a human comes from places other users or
// programs control: unit file names, YAML values quoted in errors, process
// titles of adopted groups, ledger entries. A name holding an escape
// sequence must not reach the terminal raw (it could rewrite the screen,
// hide a line, or set the window title), so every such string is made
// inert before it is printed: control characters, C1 controls, invalid
// UTF-8 and bidirectional overrides are written as Go escapes (\x1b,
// \u202e). Newlines and tabs stay: they are layout. JSON output needs none
// of this: encoding/json escapes control characters itself.

// inert returns s with every character that a terminal would act on
// escaped; s itself when it holds none.
func inert(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case acted(r):
			if r < 0x100 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ { // ASCII, as most texts are, byte by byte
		c := s[i]
		if c >= utf8.RuneSelf {
			return needsEscapeRunes(s[i:])
		}
		if acted(rune(c)) {
			return true
		}
	}
	return false
}

func needsEscapeRunes(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 || acted(r) {
			return true
		}
		i += n
	}
	return false
}

// acted reports a character a terminal interprets rather than shows:
// C0 controls but newline and tab, DEL, C1 controls, and the Unicode
// bidirectional embeddings, overrides and isolates.
func acted(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f:
		return true
	}
	return false
}

// inertAll makes every string reachable from v (a pointer to a struct of
// the control API) inert in place: fields, slices, maps and pointers.
// What holds no string (numbers, times, durations, a slice of ports) is
// not walked: a status of thousands of units is mostly that.
func inertAll(v any) {
	inertValue(reflect.ValueOf(v))
}

// textTypes says, by type, whether a value of it can hold a string that
// inertValue would change; textFields are the fields of a struct type
// that can. Both are filled as types are met; guarded by textMu.
var (
	textMu     sync.Mutex
	textTypes  = map[reflect.Type]bool{}
	textFields = map[reflect.Type][]int{}
)

// holdsText says whether a value of t can hold such a string.
func holdsText(t reflect.Type) bool {
	textMu.Lock()
	defer textMu.Unlock()
	return holdsTextLocked(t)
}

func holdsTextLocked(t reflect.Type) bool {
	if h, ok := textTypes[t]; ok {
		return h
	}
	textTypes[t] = true // while it is looked at: a type that holds itself may hold text
	h := false
	switch t.Kind() {
	case reflect.String, reflect.Interface:
		h = true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		h = holdsTextLocked(t.Elem())
	case reflect.Map:
		h = holdsTextLocked(t.Key()) || holdsTextLocked(t.Elem())
	case reflect.Struct:
		var fields []int
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && holdsTextLocked(f.Type) {
				fields = append(fields, i)
			}
		}
		textFields[t] = fields
		h = len(fields) > 0
	}
	textTypes[t] = h
	return h
}

// fieldsWithText are the fields of struct type t that can hold a string.
func fieldsWithText(t reflect.Type) []int {
	textMu.Lock()
	defer textMu.Unlock()
	holdsTextLocked(t)
	return textFields[t]
}

func inertValue(v reflect.Value) {
	if !v.IsValid() || !holdsText(v.Type()) {
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			inertValue(v.Elem())
		}
	case reflect.String:
		if v.CanSet() {
			v.SetString(inert(v.String()))
		}
	case reflect.Struct:
		for _, i := range fieldsWithText(v.Type()) {
			inertValue(v.Field(i))
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			inertValue(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			inertValue(e)
			nk := k
			if k.Kind() == reflect.String {
				nk = reflect.ValueOf(inert(k.String())).Convert(k.Type())
				if nk.String() != k.String() {
					v.SetMapIndex(k, reflect.Value{})
				}
			}
			v.SetMapIndex(nk, e)
		}
	}
}
