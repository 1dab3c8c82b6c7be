package main

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// funcOf is a function declaration head (through its opening brace) with
// a body of n lines between its braces.
func funcOf(head string, n int) string {
	return head + "\n" + strings.Repeat("\tprintln()\n", n) + "}\n"
}

func TestLongFuncs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string // file:line of each finding
		what  []string // a word each finding's text must hold, in order
	}{
		{
			name:  "a body of exactly the ceiling",
			files: map[string]string{"a/a.go": "package a\n\n" + funcOf("func f() {", maxFuncLines)},
		},
		{
			name:  "a body one line over",
			files: map[string]string{"a/a.go": "package a\n\n" + funcOf("func f() {", maxFuncLines+1)},
			want:  []string{"a/a.go:3"},
			what:  []string{"f has a body of 101 lines, over 100"},
		},
		{
			name: "methods named as gocyclo does",
			files: map[string]string{"a/a.go": "package a\n\ntype T struct{}\n\n" +
				funcOf("func (t *T) m() {", maxFuncLines+1) + funcOf("func (T) v() {", maxFuncLines+2)},
			want: []string{"a/a.go:5", "a/a.go:108"},
			what: []string{"(*T).m has", "(T).v has a body of 102 lines"},
		},
		{
			name: "a multi-line signature does not count",
			files: map[string]string{"a/a.go": "package a\n\n" +
				funcOf("func f(\n\ta int,\n\tb int,\n) {", maxFuncLines)},
		},
		{
			name: "a literal inside a long function is not reported twice",
			files: map[string]string{"a/a.go": "package a\n\n" +
				funcOf("func f() {\n\tg := func() {\n"+strings.Repeat("\t\tprintln()\n", maxFuncLines+1)+"\t}\n\tg()", 0)},
			want: []string{"a/a.go:3"},
			what: []string{"f has a body of 104 lines"},
		},
		{
			name:  "a long package-level literal",
			files: map[string]string{"a/a.go": "package a\n\nvar f = " + funcOf("func() {", maxFuncLines+1)},
			want:  []string{"a/a.go:3"},
			what:  []string{"a function literal has"},
		},
		{
			name:  "the supervisor is not exempt",
			files: map[string]string{"supervisor/s.go": "package supervisor\n\n" + funcOf("func f() {", maxFuncLines+1)},
			want:  []string{"supervisor/s.go:3"},
			what:  []string{"f has"},
		},
		{
			name: "tests, testdata and nested modules are skipped",
			files: map[string]string{
				"a/a_test.go":       "package a\n\n" + funcOf("func f() {", maxFuncLines+1),
				"a/testdata/x.go":   "package x\n\n" + funcOf("func f() {", maxFuncLines+1),
				"nested/go.mod":     "module example.com/nested\n",
				"nested/n.go":       "package n\n\n" + funcOf("func f() {", maxFuncLines+1),
				"a/ok.go":           "package a\n\nfunc g() {}\n",
				"a/decl_only.go":    "package a\n\nfunc h()\n",
				"a/sorted_after.go": "package a\n\n" + funcOf("func k() {", maxFuncLines+1),
			},
			want: []string{"a/sorted_after.go:3"},
			what: []string{"k has"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			found, err := LongFuncs(plant(t, tc.files), maxFuncLines)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i, f := range found {
				got = append(got, f.File+":"+strconv.Itoa(f.Line))
				if i < len(tc.what) && !strings.Contains(f.What, tc.what[i]) {
					t.Errorf("finding %q does not say %q", f, tc.what[i])
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v (%v)", got, tc.want, found)
			}
		})
	}
}

func TestLongFuncsErrors(t *testing.T) {
	if _, err := LongFuncs(t.TempDir(), maxFuncLines); err == nil {
		t.Error("LongFuncs of a directory without go.mod succeeded, want an error")
	}
	root := plant(t, map[string]string{"a/a.go": "package a\nfunc {"})
	if _, err := LongFuncs(root, maxFuncLines); err == nil {
		t.Error("LongFuncs of a module with a syntax error succeeded, want an error")
	}
}

// TestLongFuncsLimit checks that the limit given is the one applied.
func TestLongFuncsLimit(t *testing.T) {
	root := plant(t, map[string]string{"a/a.go": "package a\n\n" + funcOf("func f() {", 4)})
	for limit, want := range map[int]int{3: 1, 4: 0} {
		found, err := LongFuncs(root, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(found) != want {
			t.Errorf("limit %d: got %d findings, want %d (%v)", limit, len(found), want, found)
		}
	}
}
