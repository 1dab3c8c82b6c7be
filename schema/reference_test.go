package schema

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestReferenceIsGenerated checks that docs/reference.md is what the
// schema files give (go generate ./schema writes it) and that it lists
// every key of both schemas.
func TestReferenceIsGenerated(t *testing.T) {
	files, keys := generated(t)
	want, err := Reference(files)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(ReferenceFile)
	if err != nil {
		t.Fatalf("%s: %v; run go generate ./schema", ReferenceFile, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what the schema gives; run go generate ./schema and commit it", ReferenceFile)
	}
	for _, k := range keys {
		name := strings.SplitN(k.Path, ".", 2)[1]
		if !bytes.Contains(got, []byte("| `"+name+"` |")) {
			t.Errorf("%s has no row for %s", ReferenceFile, k.Path)
		}
	}
}

// TestReferenceExamples checks that every key that takes a value has an
// example, that no example names a key the schemas lack, and that each
// example, set in an otherwise minimal file, validates against its schema.
func TestReferenceExamples(t *testing.T) {
	_, keys := generated(t)
	known := map[string]bool{}
	unitSchema, configSchema := compile(t, "unit.schema.json"), compile(t, "config.schema.json")
	for _, k := range keys {
		known[k.Path] = true
		if k.Block {
			continue
		}
		if k.Example == "" {
			t.Errorf("key %s has no example in schema.Examples", k.Path)
			continue
		}
		doc := nest(strings.SplitN(k.Path, ".", 2)[1], k.Example)
		s := configSchema
		if strings.HasPrefix(k.Path, "unit.") {
			s = unitSchema
			doc = exampleUnitBase(k.Path) + doc
		}
		if err := s.Validate(instance(t, []byte(doc))); err != nil {
			t.Errorf("example of %s does not validate:\n%s\n%v", k.Path, doc, err)
		}
	}
	for p := range Examples {
		if !known[p] {
			t.Errorf("schema.Examples has %s, which no schema has", p)
		}
	}
}

// exampleUnitBase is what a unit needs besides the key shown: a command,
// and the keys the schema requires with it.
func exampleUnitBase(path string) string {
	switch path {
	case "unit.command", "unit.shell":
		return ""
	case "unit.pid_file":
		return "command: [x]\ntype: forking\n"
	case "unit.remain_after_exit":
		return "command: [x]\ntype: oneshot\n"
	case "unit.reason":
		return "command: [x]\nownership: adoptable\n"
	case "unit.ownership":
		return "command: [x]\nreason: kept\n"
	case "unit.run_budget_seconds":
		return "command: [x]\nschedule: \"0 2 * * *\"\n"
	case "unit.wrapup_signal":
		return "command: [x]\nschedule: \"0 2 * * *\"\nrun_budget_seconds: 60\n"
	}
	return "command: [x]\n"
}

// nest writes key (a dotted path with <id> and [] parts) set to its
// example as a YAML document. A list item gets the examples of its
// sibling keys too, and a unit's provider block its id and base_url, as
// the schema requires them together.
func nest(path, value string) string {
	full := "config." + path
	if _, ok := Examples["unit."+path]; ok {
		full = "unit." + path
	}
	doc := map[string]any{}
	set(doc, strings.Split(path, "."), value)
	if i := strings.LastIndex(path, "[]."); i >= 0 {
		for p, v := range Examples {
			if strings.HasPrefix(p, full[:len(full)-len(path)+i+3]) && strings.Count(p, ".") == strings.Count(full, ".") {
				set(doc, strings.Split(strings.SplitN(p, ".", 2)[1], "."), v)
			}
		}
	}
	if strings.HasPrefix(full, "unit.provider.") {
		set(doc, []string{"provider", "id"}, Examples["unit.provider.id"])
		set(doc, []string{"provider", "base_url"}, Examples["unit.provider.base_url"])
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return string(out)
}

// set puts value (YAML text) at parts in m.
func set(m map[string]any, parts []string, value string) {
	name, isList := strings.CutSuffix(parts[0], "[]")
	if name == "<id>" {
		name = "example"
	}
	if len(parts) == 1 {
		var v any
		if err := yaml.Unmarshal([]byte(value), &v); err != nil {
			panic(err)
		}
		m[name] = v
		return
	}
	if isList {
		list, _ := m[name].([]any)
		if len(list) == 0 {
			list = []any{map[string]any{}}
		}
		m[name] = list
		set(list[0].(map[string]any), parts[1:], value)
		return
	}
	sub, ok := m[name].(map[string]any)
	if !ok {
		sub = map[string]any{}
		m[name] = sub
	}
	set(sub, parts[1:], value)
}

// generated returns the files Generate writes and every key of both their
// schemas, sorted by path; t fails at once when either cannot be had.
func generated(t *testing.T) (map[string][]byte, []RefKey) {
	t.Helper()
	files, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	var all []RefKey
	for _, f := range []struct{ file, prefix string }{{"unit.schema.json", "unit"}, {"config.schema.json", "config"}} {
		keys, err := Keys(files[f.file], f.prefix)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, keys...)
	}
	slices.SortStableFunc(all, func(a, b RefKey) int { return strings.Compare(a.Path, b.Path) })
	return files, all
}
