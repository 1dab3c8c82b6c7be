// Package docs holds the project's prose and the tests that keep it true.
package docs

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestUnitReferenceMatchesSchema checks that the README's unit reference
// lists exactly the keys the unit schema accepts, nested keys as dotted
// paths, so the reference cannot drift from what the loader takes.
func TestUnitReferenceMatchesSchema(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := referenceKeys(t, string(readme))

	raw, err := os.ReadFile("../schema/unit.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var root node
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatal(err)
	}
	var accepted []string
	root.keys(root.Defs, "", &accepted)
	slices.Sort(accepted)

	for _, k := range accepted {
		if !slices.Contains(documented, k) {
			t.Errorf("schema key %q is missing from the README's unit reference", k)
		}
	}
	for _, k := range documented {
		if !slices.Contains(accepted, k) {
			t.Errorf("README documents %q, which the unit schema does not accept", k)
		}
	}
}

var keyCell = regexp.MustCompile("^\\| `([a-z_.]+)` \\|")

func referenceKeys(t *testing.T, readme string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "<!-- unit-reference:")
	if !ok {
		t.Fatal("README has no <!-- unit-reference: marker")
	}
	table, _, ok := strings.Cut(rest, "<!-- end unit-reference -->")
	if !ok {
		t.Fatal("README has no <!-- end unit-reference --> marker")
	}
	var keys []string
	for _, line := range strings.Split(table, "\n") {
		if m := keyCell.FindStringSubmatch(line); m != nil {
			keys = append(keys, m[1])
		}
	}
	if len(keys) == 0 {
		t.Fatal("README's unit reference lists no keys")
	}
	return keys
}

// node is the part of a JSON Schema the walk needs.
type node struct {
	Ref        string           `json:"$ref"`
	Defs       map[string]*node `json:"$defs"`
	Type       any              `json:"type"`
	Properties map[string]*node `json:"properties"`
}

// keys appends the dotted names of n's properties, descending into object
// properties that declare their own (not into maps such as env or models).
func (n *node) keys(defs map[string]*node, prefix string, out *[]string) {
	for name, p := range n.Properties {
		key := prefix + name
		*out = append(*out, key)
		target := p
		if p.Ref != "" {
			target = defs[strings.TrimPrefix(p.Ref, "#/$defs/")]
		}
		if target != nil && target.Type == "object" && len(target.Properties) > 0 {
			target.keys(defs, key+".", out)
		}
	}
}
