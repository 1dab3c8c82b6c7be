package docs

import (
	"go/ast"
	"go/token"
	"strconv"
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
	eachSource(t, func(dir string) bool { return dir == "tools" }, func(fset *token.FileSet, _ string, f *ast.File) {
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
	})
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
