package schema

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/hermes-units/hermes/units"
)

// TestEnumsMatchWords: every enum of the schemas (type, ownership,
// restart, role, defaults.restart) lists words the loader takes under
// that key, and a word the enum lacks is refused by the loader as by the
// schema: the enums are the decoder's words, no more, no fewer. An enum
// in an if (a condition on some of the words) lists only words of its
// key's enum.
func TestEnumsMatchWords(t *testing.T) {
	for _, f := range []struct{ file, prefix string }{{"unit.schema.json", "unit"}, {"config.schema.json", "config"}} {
		b, err := os.ReadFile(f.file)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		s := compile(t, f.file)
		enums := map[string][]string{}
		var conds [][2]string // key, word
		walkProperties(doc, "", false, func(path string, prop map[string]any, cond bool) {
			enum, _ := prop["enum"].([]any)
			for _, e := range enum {
				w, _ := e.(string)
				if cond {
					conds = append(conds, [2]string{path, w})
				} else {
					enums[path] = append(enums[path], w)
				}
			}
		})
		if len(enums) == 0 {
			t.Fatalf("%s has no enum", f.file)
		}
		for path, words := range enums {
			for _, w := range append(slices.Clone(words), "not-a-word") {
				data := []byte(enumDoc(f.prefix, path, w))
				want := w != "not-a-word"
				if got := s.Validate(instance(t, data)) == nil; got != want {
					t.Errorf("%s: the schema accepts %s: %s: %v, want %v", f.file, path, w, got, want)
				}
				if got := loads(f.prefix, data); got != want {
					t.Errorf("%s: the loader accepts %s: %s: %v, want %v (the schema's enum is %q)", f.file, path, w, got, want, words)
				}
			}
		}
		for _, c := range conds {
			if !slices.Contains(enums[c[0]], c[1]) {
				t.Errorf("%s: a condition on %s names %q, not one of its enum's words %q", f.file, c[0], c[1], enums[c[0]])
			}
		}
	}
}

// enumDoc is a minimal file of kind prefix ("unit" or "config") that sets
// the dotted key path to word.
func enumDoc(prefix, path, word string) string {
	doc := map[string]any{}
	parts := strings.Split(path, ".")
	m := doc
	for _, p := range parts[:len(parts)-1] {
		sub := map[string]any{}
		m[p], m = sub, sub
	}
	m[parts[len(parts)-1]] = word
	out, err := yaml.Marshal(doc)
	if err != nil {
		panic(err)
	}
	if prefix == "unit" {
		return exampleUnitBase("unit."+path) + string(out)
	}
	return string(out)
}

// loads reports whether the loader takes data as a unit file (prefix
// "unit") or as hermes.yaml.
func loads(prefix string, data []byte) bool {
	if prefix == "unit" {
		_, err := (&units.Loader{}).Parse("/u/web.yaml", data)
		return err == nil
	}
	_, err := units.ParseConfig("/etc/hermes.yaml", "/etc", data)
	return err == nil
}

// walkProperties calls f with the dotted path of each property of every
// object schema in v, and whether it is part of an if's condition.
func walkProperties(v any, path string, cond bool, f func(path string, prop map[string]any, cond bool)) {
	switch v := v.(type) {
	case map[string]any:
		if props, ok := v["properties"].(map[string]any); ok {
			for k, p := range props {
				if pm, ok := p.(map[string]any); ok {
					full := strings.TrimPrefix(path+"."+k, ".")
					f(full, pm, cond)
					walkProperties(pm, full, cond, f)
				}
			}
		}
		for k, c := range v {
			if k != "properties" {
				walkProperties(c, path, cond || k == "if", f)
			}
		}
	case []any:
		for _, c := range v {
			walkProperties(c, path, cond, f)
		}
	}
}
