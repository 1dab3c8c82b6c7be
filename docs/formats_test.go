package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// maxFormat is the longest format string a fmt.Errorf or fmt.Sprintf of
// the module's non-test code may take. A message longer than that mixes
// what happened with what to do about it; it is a diag.Error instead,
// whose parts each surface renders apart (the control API's summary and
// detail, hermesctl's indented fix).
const maxFormat = 200

// TestFormatLength fails on a format string over maxFormat characters
// passed to fmt.Errorf or fmt.Sprintf in a non-test file of the module (a
// constant one: literals, joined by + or not). tools/ is left out: its
// programs are not shipped, and make bench's long formats are the
// report's account of how a number was measured, which nobody acts on.
func TestFormatLength(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != ".." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || path == filepath.Join("..", "tools")) {
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
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 || !isFmt(call.Fun, "Errorf", "Sprintf") {
				return true
			}
			if s, ok := constString(call.Args[0]); ok && len(s) > maxFormat {
				t.Errorf("%s: a format string of %d characters (at most %d): make it a diag.Error (what, where, fix)", fset.Position(call.Pos()), len(s), maxFormat)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// isFmt says whether fun is fmt.<one of names>.
func isFmt(fun ast.Expr, names ...string) bool {
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok || pkg.Name != "fmt" {
		return false
	}
	for _, n := range names {
		if sel.Sel.Name == n {
			return true
		}
	}
	return false
}

// constString is the value of a string literal, or of literals joined by +.
func constString(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		a, ok1 := constString(e.X)
		b, ok2 := constString(e.Y)
		return a + b, ok1 && ok2
	case *ast.ParenExpr:
		return constString(e.X)
	}
	return "", false
}
