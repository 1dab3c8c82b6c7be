package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// eachSource parses every non-test Go file of the module (testdata and
// hidden directories left out, and the directories skip names, by their
// path from the module's root) and gives each to visit with its
// directory from the root and the file set that positions it.
func eachSource(t *testing.T, skip func(dir string) bool, visit func(fset *token.FileSet, dir string, f *ast.File)) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			rel, _ := filepath.Rel("..", path)
			if path != ".." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || skip(filepath.ToSlash(rel))) {
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
		dir, _ := filepath.Rel("..", filepath.Dir(path))
		visit(fset, filepath.ToSlash(dir), f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
