package docs

import (
	"go/ast"
	"go/token"
	"maps"
	"slices"
	"strings"
	"testing"
)

// maxFields is the most fields a struct of run-time state may have
// (architecture.md, "Central state"): a struct that grows past it is split
// by phase or by guard, not grown.
const maxFields = 25

// declarations are the structs allowed more fields: each has the shape of
// something declared outside the code (a file, the flags, a wire), one
// field per key, and grows only when that does.
var declarations = map[string]string{
	"internal/importer.File": "a systemd unit file's keys that the importer maps",
	"units.Spec":             "a unit file's keys",
	"reconciler.Options":     "hermesd's settings of the reconciler, one per flag or hermes.yaml key",
	"control.Unit":           "the control API's unit row (docs/openapi.yaml)",
}

// TestStructFields holds every struct type of the module's non-test files
// (tools included) to maxFields fields, an embedded type counting as one,
// but for the declarations. A declaration listed that is no longer over the
// limit, or no longer there, fails too, so that the list stays short.
func TestStructFields(t *testing.T) {
	over := map[string]int{}
	eachSource(t, func(dir string) bool { return strings.HasSuffix(dir, "node_modules") }, func(_ *token.FileSet, dir string, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			if st, ok := ts.Type.(*ast.StructType); ok {
				if n := countFields(st); n > maxFields {
					over[dir+"."+ts.Name.Name] = n
				}
			}
			return true
		})
	})
	for _, name := range slices.Sorted(maps.Keys(over)) {
		if _, ok := declarations[name]; !ok {
			t.Errorf("struct %s has %d fields, more than %d: split it by phase (what exists only while a unit runs, stops, is adopted) or by what guards it, as architecture.md says", name, over[name], maxFields)
		}
	}
	for name, why := range declarations {
		if _, ok := over[name]; !ok {
			t.Errorf("struct %s (%s) is listed as a declaration over %d fields, but it is not over the limit or not there: take it off the list", name, why, maxFields)
		}
	}
}

// countFields counts a struct's fields, each name of a list one, an
// embedded type one.
func countFields(st *ast.StructType) int {
	n := 0
	for _, f := range st.Fields.List {
		n += max(len(f.Names), 1)
	}
	return n
}
