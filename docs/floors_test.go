package docs

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestFloors holds every package of the module to the floors that
// architecture.md draws: a package's non-test files import only packages of
// ours on a floor below its own, and the packages the doc says import the
// standard library only import no other module either. A package the doc
// does not place, or a name the doc places that is no package, fails too, so
// the doc and the module cannot drift apart. The imports are read with
// go list for each platform the project builds on, since a file split by
// build tags may import what another platform's does not.
func TestFloors(t *testing.T) {
	doc, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	floors := parseFloors(t, string(doc))
	stdOnly := parseStdOnly(t, string(doc))
	for _, goos := range []string{"linux", "darwin", "freebsd"} {
		t.Run(goos, func(t *testing.T) {
			module, pkgs := listPackages(t, goos)
			listed := map[string]bool{}
			for _, p := range pkgs {
				name := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
				listed[name] = true
				floor, ok := floors[name]
				if !ok {
					t.Errorf("package %s is on no floor of architecture.md: add it to the floors block", name)
					continue
				}
				for _, imp := range p.Imports {
					if rest, ours := strings.CutPrefix(imp, module+"/"); ours {
						if below, ok := floors[rest]; ok && below >= floor {
							t.Errorf("%s (floor %d) imports %s (floor %d): a package imports only from the floors below its own", name, floor, rest, below)
						}
					} else if stdOnly[name] && !isStandard(imp) {
						t.Errorf("%s imports %s: architecture.md says it imports the standard library only", name, imp)
					}
				}
			}
			for name := range floors {
				if !listed[name] {
					t.Errorf("architecture.md's floors name %s, which is no package of the module", name)
				}
			}
		})
	}
}

// goPackage is the part of go list -json's output the floors need.
type goPackage struct {
	ImportPath string
	Module     struct{ Path string }
	Imports    []string
}

// listPackages is every package of the module as go list sees it for goos,
// and the module's path.
func listPackages(t *testing.T, goos string) (string, []goPackage) {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Module,Imports", "./...")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var module string
	var pkgs []goPackage
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list's output: %v", err)
		}
		module = p.Module.Path
		pkgs = append(pkgs, p)
	}
	if module == "" {
		t.Fatal("go list named no package of a module")
	}
	return module, pkgs
}

// isStandard reports whether path is a package of the standard library,
// whose first element, unlike a module's, has no dot.
func isStandard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// parseFloors reads the floors block of architecture.md (the fenced block
// after "**The floors.**"): each line a floor's number, then its packages,
// where dir/{a,b} stands for dir/a and dir/b.
func parseFloors(t *testing.T, doc string) map[string]int {
	t.Helper()
	_, after, ok := strings.Cut(doc, "**The floors.**")
	if !ok {
		t.Fatal("architecture.md has no **The floors.** paragraph")
	}
	_, after, ok = strings.Cut(after, "```\n")
	block, _, closed := strings.Cut(after, "```")
	if !ok || !closed {
		t.Fatal("architecture.md's floors have no fenced block")
	}
	floors := map[string]int{}
	for line := range strings.Lines(block) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		floor, err := strconv.Atoi(fields[0])
		if err != nil || floor < 0 {
			t.Fatalf("floors line %q: want a floor number first", line)
		}
		for _, f := range fields[1:] {
			for _, name := range expandBraces(f) {
				if prev, dup := floors[name]; dup {
					t.Errorf("architecture.md places %s on floors %d and %d", name, prev, floor)
				}
				floors[name] = floor
			}
		}
	}
	return floors
}

// expandBraces turns "dir/{a,b}" into "dir/a" and "dir/b"; a word without
// braces is itself.
func expandBraces(word string) []string {
	prefix, rest, ok := strings.Cut(word, "{")
	if !ok {
		return []string{word}
	}
	alternatives, suffix, _ := strings.Cut(rest, "}")
	var out []string
	for a := range strings.SplitSeq(alternatives, ",") {
		out = append(out, prefix+a+suffix)
	}
	return out
}

// parseStdOnly is the set of packages named in backquotes in
// architecture.md's "**The standard library only**" paragraph.
func parseStdOnly(t *testing.T, doc string) map[string]bool {
	t.Helper()
	_, after, ok := strings.Cut(doc, "**The standard library only**")
	if !ok {
		t.Fatal("architecture.md has no **The standard library only** paragraph")
	}
	paragraph, _, _ := strings.Cut(after, "\n\n")
	names := map[string]bool{}
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(paragraph, -1) {
		names[m[1]] = true
	}
	if len(names) == 0 {
		t.Fatal("architecture.md's standard-library-only paragraph names no package")
	}
	return names
}
