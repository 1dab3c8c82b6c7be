package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
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
	fset := token.NewFileSet()
	over := map[string]int{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != ".." && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg, _ := filepath.Rel("..", filepath.Dir(path))
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			if n := countFields(st); n > maxFields {
				over[filepath.ToSlash(pkg)+"."+ts.Name.Name] = n
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
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
