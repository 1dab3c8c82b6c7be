package main

import (
	"fmt"
	"reflect"
	"strings"
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
func inertAll(v any) {
	inertValue(reflect.ValueOf(v))
}

func inertValue(v reflect.Value) {
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
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				inertValue(v.Field(i))
			}
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
