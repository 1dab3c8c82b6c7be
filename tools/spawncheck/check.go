package main

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// allowed lists the packages (paths relative to the module) whose files are
// the supervisor's own spawn code: the only place a detached spawn belongs.
// Keep it short and explicit.
var allowed = []string{
	"supervisor",
}

// detachFields are the SysProcAttr fields that move a child out of its
// parent's process group, session or terminal.
var detachFields = map[string]bool{"Setsid": true, "Setpgid": true, "Setctty": true, "Foreground": true}

// detachFuncs are the functions, by package import path, that detach the
// calling process.
var detachFuncs = map[string]map[string]bool{
	"syscall":               {"Setsid": true, "Setpgid": true},
	"golang.org/x/sys/unix": {"Setsid": true, "Setpgid": true},
}

// marker is the waiver: "detached-spawn: ok — <why>" (an em dash or "--",
// then a reason). markerStart finds an attempt, with or without a reason.
var (
	marker      = regexp.MustCompile(`detached-spawn:\s*ok\s*(?:—|--)\s*\S`)
	markerStart = regexp.MustCompile(`detached-spawn:\s*ok`)
)

// Finding is one detached spawn outside the allowed packages.
type Finding struct {
	File string // relative to the module root, slash-separated
	Line int
	What string
}

func (f Finding) String() string { return fmt.Sprintf("%s:%d: %s", f.File, f.Line, f.What) }

// Check parses every non-test .go file of the module rooted at root (skipping
// testdata, vendor, hidden directories and nested modules) and returns the
// detached spawns outside the allowed packages that carry no valid marker,
// sorted by file and line. An error means the module could not be read or a
// file did not parse.
func Check(root string) ([]Finding, error) {
	module, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	return findAll(root, parser.ParseComments, func(rel string) bool {
		return allowedPackage(module, path.Join(module, path.Dir(rel)))
	}, checkFile)
}

// findAll parses every file walkModule visits, but those skip says to
// skip by their module-relative path (nil: none), and returns what find
// says of them, sorted by file and line.
func findAll(root string, mode parser.Mode, skip func(rel string) bool, find func(*token.FileSet, *ast.File, string) []Finding) ([]Finding, error) {
	var out []Finding
	fset := token.NewFileSet()
	err := walkModule(root, func(p, rel string) error {
		if skip != nil && skip(rel) {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, mode|parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parse %s: %w", rel, err)
		}
		out = append(out, find(fset, f, rel)...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Finding) int { return cmp.Or(strings.Compare(a.File, b.File), a.Line-b.Line) }) // by file, then line
	return out, nil
}

// walkModule calls visit, in lexical order, with the path and the
// module-relative slash-separated path of every non-test .go file of the
// module rooted at root, skipping testdata, vendor, hidden directories and
// nested modules. It stops at visit's first error and returns it.
func walkModule(root string, visit func(p, rel string) error) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if rel != "." {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		return visit(p, rel)
	})
}

// allowedPackage reports whether the package with import path pkg is one of
// the allowed packages of module.
func allowedPackage(module, pkg string) bool {
	return slices.ContainsFunc(allowed, func(a string) bool { return pkg == path.Join(module, a) })
}

// modulePath reads the module line of go.mod.
func modulePath(gomod string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", fmt.Errorf("%w: run from the module root (where go.mod is)", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(m), `"`), nil
		}
	}
	return "", errors.New(gomod + ": no module line")
}

// checkFile finds the detached spawns of one file and drops those waived by
// a valid marker on their line or the line above.
func checkFile(fset *token.FileSet, f *ast.File, rel string) []Finding {
	s := &spawnScan{fset: fset, rel: rel, pkgs: detachImports(f)}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			s.literal(n)
		case *ast.AssignStmt:
			s.assign(n)
		case *ast.SelectorExpr:
			s.selector(n)
		case *ast.CallExpr:
			s.call(n)
		}
		return true
	})
	if len(s.found) == 0 {
		return nil
	}
	return waive(fset, f, s.found)
}

// detachImports maps the local names of f's imports of the packages whose
// functions detach (detachFuncs) to their import paths.
func detachImports(f *ast.File) map[string]string {
	pkgs := map[string]string{} // local name → import path
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if _, ok := detachFuncs[p]; !ok {
			continue
		}
		name := path.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		pkgs[name] = p
	}
	return pkgs
}

// spawnScan collects the detached spawns of one file as checkFile walks
// its syntax tree, one node kind per method.
type spawnScan struct {
	fset  *token.FileSet
	rel   string            // the file, relative to the module root
	pkgs  map[string]string // detachImports of the file
	found []Finding
}

// add records a finding at pos.
func (s *spawnScan) add(pos token.Pos, what string) {
	s.found = append(s.found, Finding{File: s.rel, Line: s.fset.Position(pos).Line, What: what})
}

// isSysProcAttr reports whether t names SysProcAttr of a package that
// detaches (syscall or unix under their local names).
func (s *spawnScan) isSysProcAttr(t ast.Expr) bool {
	sel, ok := t.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "SysProcAttr" {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && s.pkgs[x.Name] != ""
}

// literal finds a SysProcAttr literal, or an elided-type literal (in a
// slice or map of them), that sets a detaching field to anything but false.
func (s *spawnScan) literal(n *ast.CompositeLit) {
	if n.Type != nil && !s.isSysProcAttr(n.Type) {
		return
	}
	for _, el := range n.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		k, ok := kv.Key.(*ast.Ident)
		if ok && detachFields[k.Name] && !isFalse(kv.Value) {
			s.add(kv.Pos(), k.Name+" set in a SysProcAttr literal")
		}
	}
}

// assign finds an assignment to a detaching field, unless the value
// assigned to it is plainly false.
func (s *spawnScan) assign(n *ast.AssignStmt) {
	for i, lhs := range n.Lhs {
		sel, ok := lhs.(*ast.SelectorExpr)
		if !ok || !detachFields[sel.Sel.Name] {
			continue
		}
		if i < len(n.Rhs) && len(n.Lhs) == len(n.Rhs) && isFalse(n.Rhs[i]) {
			continue
		}
		s.add(sel.Pos(), sel.Sel.Name+" assigned on a SysProcAttr")
	}
}

// selector finds a use of a detaching function (detachFuncs), called or
// not.
func (s *spawnScan) selector(n *ast.SelectorExpr) {
	x, ok := n.X.(*ast.Ident)
	if !ok {
		return
	}
	if p := s.pkgs[x.Name]; p != "" && detachFuncs[p][n.Sel.Name] {
		s.add(n.Pos(), "call to "+x.Name+"."+n.Sel.Name)
	}
}

// call finds exec.Command("setsid", ...) and exec.CommandContext(ctx,
// "setsid", ...): the program named by a string literal, by path or not.
func (s *spawnScan) call(n *ast.CallExpr) {
	sel, ok := n.Fun.(*ast.SelectorExpr)
	if !ok {
		return
	}
	i := -1
	switch sel.Sel.Name {
	case "Command":
		i = 0
	case "CommandContext":
		i = 1
	}
	if i < 0 || i >= len(n.Args) {
		return
	}
	if lit, ok := n.Args[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
		if prog, _ := strconv.Unquote(lit.Value); path.Base(prog) == "setsid" {
			s.add(lit.Pos(), "runs the setsid program")
		}
	}
}

// waive drops the findings of f that a valid marker on their line or the
// line above waives, and completes the text of the others: a marker without
// a reason, or none.
func waive(fset *token.FileSet, f *ast.File, found []Finding) []Finding {
	valid, bare := markers(fset, f)
	out := found[:0]
	for _, fd := range found {
		switch {
		case valid[fd.Line] || valid[fd.Line-1]:
			continue
		case bare[fd.Line] || bare[fd.Line-1]:
			fd.What += ": the detached-spawn marker has no reason; write `detached-spawn: ok — <why>`"
		default:
			fd.What += ": a detached spawn outside the supervisor; spawn through supervisor.SpawnOwned, or mark the line `// detached-spawn: ok — <why>`"
		}
		out = append(out, fd)
	}
	return out
}

// markers returns the lines that carry a valid marker and those that carry
// one without a reason.
func markers(fset *token.FileSet, f *ast.File) (valid, bare map[int]bool) {
	valid, bare = map[int]bool{}, map[int]bool{}
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			// A /* */ comment may span lines: judge each line on its own.
			start := fset.Position(c.Pos()).Line
			for i, line := range strings.Split(c.Text, "\n") {
				switch {
				case marker.MatchString(line):
					valid[start+i] = true
				case markerStart.MatchString(line):
					bare[start+i] = true
				}
			}
		}
	}
	return valid, bare
}

func isFalse(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == "false"
}
