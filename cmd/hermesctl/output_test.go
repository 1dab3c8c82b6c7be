package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/spf13/cobra"
)

func init() {
	scriptCmds["jsonout"] = cmdJSONOut
}

// cmdJSONOut is the script command `jsonout`: it fails unless the stdout
// of the last command is JSON: one value, or JSON lines, and not empty.
func cmdJSONOut(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: jsonout")
	}
	out := ts.ReadFile("stdout")
	dec := json.NewDecoder(strings.NewReader(out))
	n := 0
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			ts.Fatalf("stdout is not JSON: %v\n%s", err, out)
		}
		n++
	}
	if n == 0 {
		ts.Fatalf("stdout is empty, want JSON")
	}
}

// runnable lists every command of the tree below root that runs (not a
// group, not help), by its path below root.
func runnable(root *cobra.Command) []string {
	var out []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c != root && c.Runnable() && c.Name() != "help" && !c.Hidden {
			out = append(out, strings.TrimPrefix(c.CommandPath(), root.Name()+" "))
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	slices.Sort(out)
	return out
}

// TestJSONFormsCoverEveryCommand: jsonForms names every command, and
// nothing else; testdata/script/output_json.txtar runs every one with
// -o json: those with a JSON form followed by jsonout, the others refused
// with exit 2.
func TestJSONFormsCoverEveryCommand(t *testing.T) {
	root := newRoot()
	cmds := runnable(root)
	for _, c := range cmds {
		if _, ok := jsonForms[c]; !ok {
			t.Errorf("command %q is missing from jsonForms: say whether it writes JSON", c)
		}
	}
	for k := range jsonForms {
		if !slices.Contains(cmds, k) {
			t.Errorf("jsonForms names %q, which is no command", k)
		}
	}
	f, err := os.Open(filepath.Join("testdata", "script", "output_json.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		found := false
		for i, l := range lines {
			if !strings.Contains(l+" ", " -o json "+c+" ") {
				continue
			}
			found = true
			refused := jsonForms[c](parsed(t, l)) != ""
			switch {
			case refused && !strings.HasPrefix(l, "exitcode 2 "):
				t.Errorf("%s has no JSON form, and the script runs it with %q: want exitcode 2", c, l)
			case !refused && (i+1 == len(lines) || lines[i+1] != "jsonout"):
				t.Errorf("%s writes JSON, and the script does not check it with jsonout after %q", c, l)
			}
		}
		if !found {
			t.Errorf("output_json.txtar does not run %q with -o json (a line with \"-o json %s\")", c, c)
		}
	}
}

// parsed is the command a script line runs ("exec hermesctl ARGS..."),
// its flags parsed, in a tree of its own.
func parsed(t *testing.T, line string) *cobra.Command {
	t.Helper()
	_, args, ok := strings.Cut(line, "hermesctl ")
	if !ok {
		t.Fatalf("%q runs no hermesctl", line)
	}
	cmd, rest, err := newRoot().Find(strings.Fields(args))
	if err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	return cmd
}
