package schema

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/hermes-units/hermes/units"
)

// TestEnumsMatchWords: every enum of the schemas under a key that takes
// one of units' words (type, ownership, restart, role) lists exactly the
// words of that key's table, in its order, and each table is found in a
// schema: a word added to a table and not to the schema, or the other way
// round, fails here. An enum in an if (a condition on some of the words)
// lists only words of the table.
func TestEnumsMatchWords(t *testing.T) {
	words := units.Words()
	seen := map[string]bool{}
	for _, file := range []string{"unit.schema.json", "config.schema.json"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		walkProperties(doc, false, func(key string, prop map[string]any, cond bool) {
			want, ok := words[key]
			enum, has := prop["enum"].([]any)
			if !ok || !has {
				return
			}
			got := make([]string, len(enum))
			for i, e := range enum {
				got[i], _ = e.(string)
			}
			if cond {
				for _, w := range got {
					if !slices.Contains(want, w) {
						t.Errorf("%s: a condition on %s names %q, not one of units' words %q", file, key, w, want)
					}
				}
				return
			}
			seen[key] = true
			if !slices.Equal(got, want) {
				t.Errorf("%s: the enum of %s is %q, want units' words %q", file, key, got, want)
			}
		})
	}
	for key := range words {
		if !seen[key] {
			t.Errorf("no schema has an enum for %s: units' words %q", key, words[key])
		}
	}
}

// walkProperties calls f with each property of every object schema in v,
// and whether it is part of an if's condition.
func walkProperties(v any, cond bool, f func(key string, prop map[string]any, cond bool)) {
	switch v := v.(type) {
	case map[string]any:
		if props, ok := v["properties"].(map[string]any); ok {
			for k, p := range props {
				if pm, ok := p.(map[string]any); ok {
					f(k, pm, cond)
				}
			}
		}
		for k, c := range v {
			walkProperties(c, cond || k == "if", f)
		}
	case []any:
		for _, c := range v {
			walkProperties(c, cond, f)
		}
	}
}
