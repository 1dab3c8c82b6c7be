package main

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
)

// maxFuncLines is the ceiling on a function's body, in lines between its
// braces, that make lint enforces: a longer function is to be split into
// named steps. gocyclo's -over 25, in the same target, is the ceiling on
// its complexity.
const maxFuncLines = 100

// LongFuncs parses every non-test .go file of the module rooted at root
// (skipping what Check skips, but not the allowed packages: the ceiling
// holds everywhere) and returns the functions whose body runs over limit
// lines between its braces, sorted by file and line. A function literal
// counts in the length of the declaration it is in; one outside any (a
// package-level variable's) is measured on its own. An error means the
// module could not be read or a file did not parse.
func LongFuncs(root string, limit int) ([]Finding, error) {
	if _, err := modulePath(filepath.Join(root, "go.mod")); err != nil {
		return nil, err
	}
	return findAll(root, 0, nil, func(fset *token.FileSet, f *ast.File, rel string) []Finding {
		return longFuncs(fset, f, rel, limit)
	})
}

// longFuncs returns the functions of one file whose body runs over limit
// lines, each found at the line its declaration starts.
func longFuncs(fset *token.FileSet, f *ast.File, rel string, limit int) []Finding {
	var out []Finding
	ast.Inspect(f, func(n ast.Node) bool {
		var name string
		var body *ast.BlockStmt
		switch n := n.(type) {
		case *ast.FuncDecl:
			name, body = funcName(n), n.Body
		case *ast.FuncLit:
			name, body = "a function literal", n.Body
		default:
			return true
		}
		if body == nil { // declared here, defined elsewhere (assembly)
			return false
		}
		if lines := fset.Position(body.Rbrace).Line - fset.Position(body.Lbrace).Line - 1; lines > limit {
			out = append(out, Finding{
				File: rel, Line: fset.Position(n.Pos()).Line,
				What: fmt.Sprintf("%s has a body of %d lines, over %d; split it into named steps, each a function that says what it does", name, lines, limit),
			})
		}
		return false // what is inside counts in this function's length
	})
	return out
}

// funcName names a declared function as gocyclo does: f, (T).m or
// (*T).m.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	return "(" + types.ExprString(fd.Recv.List[0].Type) + ")." + fd.Name.Name
}
