package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hermes-units/hermes/internal/exitcode"
)

// TestRunValidate calls validate's run function without cobra, on unit
// files of the test's: a valid directory, one with errors, and a unit
// file checked alone (no units directory).
func TestRunValidate(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("good/web.yaml", "command: [sleep, \"3600\"]\n")
	write("bad/db.yaml", "shell: sleep 3600\ncomand: [true]\n")
	for _, tc := range []struct {
		name     string
		paths    []string
		json     bool
		out      string // a regexp of the whole output
		errOut   string // likewise, of the error stream
		wantCode int
	}{
		{name: "valid", paths: []string{"good"}, out: `^ok: 1 unit\(s\) valid, no config file \(defaults\)\n$`, errOut: `^$`},
		{name: "errors", paths: []string{"bad"}, out: `^bad/db\.yaml:2:1: unknown key "comand"; did you mean "command"\?\n$`, errOut: `^$`, wantCode: exitcode.Failure},
		{name: "-o json", paths: []string{"bad"}, json: true, out: `(?s)^\{\n  "valid": false,\n  "errors": \[\n    \{\n      "file": "bad/db\.yaml",\n      "line": 2,.*\n\}\n$`, errOut: `^$`, wantCode: exitcode.Failure},
		{name: "a file alone", paths: []string{"good/web.yaml"}, out: `^ok: 1 unit\(s\) valid, no config file \(defaults\)\n$`,
			errOut: `^validate: no units directory .*: each file is checked alone, without the cross-unit rules \(--units names the directory\)\n$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(dir)
			o, out, errOut := testClient(t, "", tc.json)
			err := runValidate(t.Context(), &validateOptions{clientOptions: o, paths: tc.paths})
			checkRun(t, err, tc.wantCode, "", out.Bytes(), tc.out)
			if !regexp.MustCompile(tc.errOut).Match(errOut.Bytes()) {
				t.Errorf("got error stream %q, want %s", errOut.String(), tc.errOut)
			}
		})
	}
}
