package docs

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestExitCodesMatchREADME checks that the README's exit-code tables list
// exactly the codes internal/exitcode declares: hermesctl's table the
// common codes and the Hermesctl ones, hermesd's the common codes and the
// Hermesd ones. A code added to one place and not the other fails.
func TestExitCodesMatchREADME(t *testing.T) {
	declared := declaredCodes(t, "../internal/exitcode/exitcode.go")
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	start := strings.Index(section, "### Exit codes\n")
	if start < 0 {
		t.Fatal("README has no ### Exit codes section")
	}
	section = section[start:]
	if end := strings.Index(section[1:], "\n#"); end >= 0 {
		section = section[:end+1]
	}
	for _, binary := range []string{"hermesctl", "hermesd"} {
		t.Run(binary, func(t *testing.T) {
			var want []int
			for name, code := range declared {
				if !strings.HasPrefix(name, "Hermes") || strings.HasPrefix(strings.ToLower(name), binary) {
					want = append(want, code)
				}
			}
			slices.Sort(want)
			if got := tableCodes(t, section, binary); !slices.Equal(got, want) {
				t.Errorf("the README's %s table lists codes %v, internal/exitcode declares %v", binary, got, want)
			}
		})
	}
}

// declaredCodes is every constant of the Go file at path, by name.
func declaredCodes(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			for i, name := range v.Names {
				lit, ok := v.Values[i].(*ast.BasicLit)
				if !ok {
					t.Fatalf("%s: %s is not a number literal", path, name.Name)
				}
				n, ok := constant.Int64Val(constant.MakeFromLiteral(lit.Value, lit.Kind, 0))
				if !ok {
					t.Fatalf("%s: %s = %s is not an int", path, name.Name, lit.Value)
				}
				codes[name.Name] = int(n)
			}
		}
	}
	return codes
}

// tableCodes is the codes in the first column of the table after the
// line "`binary`:" in section, sorted ("126, 127" is two codes).
func tableCodes(t *testing.T, section, binary string) []int {
	t.Helper()
	_, table, ok := strings.Cut(section, "\n`"+binary+"`:\n")
	if !ok {
		t.Fatalf("no `%s`: table in the README's Exit codes section", binary)
	}
	table, _, _ = strings.Cut(strings.TrimLeft(table, "\n"), "\n\n")
	var codes []int
	row := regexp.MustCompile(`^\| ([0-9, ]+) \|`)
	for _, line := range strings.Split(table, "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, c := range strings.Split(m[1], ",") {
			n, err := strconv.Atoi(strings.TrimSpace(c))
			if err != nil {
				t.Fatalf("README %s table: %q: %v", binary, line, err)
			}
			codes = append(codes, n)
		}
	}
	slices.Sort(codes)
	return codes
}
