package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/spf13/cobra"
)

// isolate points every path hermesctl reads by default into a temporary
// directory, so that a command run in-process never reads the user's.
func isolate(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	for k, v := range map[string]string{
		"HOME": dir, "XDG_CONFIG_HOME": filepath.Join(dir, "config"), "XDG_STATE_HOME": filepath.Join(dir, "state"),
		"XDG_RUNTIME_DIR": filepath.Join(dir, "run"), "HERMES_CONFIG": "", "HERMES_UNITS": "", "HERMES_STATE": "",
		"HERMES_SOCKET": filepath.Join(dir, "none.sock"),
	} {
		t.Setenv(k, v)
	}
}

// exitOf runs hermesctl with args in-process, as main does, and returns
// its exit status and what it printed on stderr.
func exitOf(args ...string) (int, string) {
	root := newRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	code := report(execute(root), &errOut)
	return code, errOut.String()
}

// commands is every command of root's tree, root and cobra's help
// included, by its arguments: nil for root, ["export", "systemd"]...
func commands(root *cobra.Command) [][]string {
	root.InitDefaultHelpCmd()
	var out [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		out = append(out, path)
		for _, sub := range c.Commands() {
			walk(sub, append(path[:len(path):len(path)], sub.Name()))
		}
	}
	walk(root, nil)
	return out
}

// TestUsageExits checks that every usage error exits 2 (exitcode.Usage)
// with its error on stderr: an unknown flag on every command of the tree,
// no argument to a command that needs one, too many to one that takes
// fewer (both found from each command's own Args), and the README's
// examples (a bad flag value, a missing required flag, an unknown command).
func TestUsageExits(t *testing.T) {
	isolate(t)
	check := func(t *testing.T, args ...string) {
		t.Helper()
		code, stderr := exitOf(args...)
		if code != exitcode.Usage {
			t.Errorf("hermesctl %s: exit %d, want %d (usage); stderr: %s", strings.Join(args, " "), code, exitcode.Usage, stderr)
		}
		if !strings.HasPrefix(stderr, "hermesctl: ") {
			t.Errorf("hermesctl %s: stderr %q, want \"hermesctl: …\"", strings.Join(args, " "), stderr)
		}
	}
	for _, path := range commands(newRoot()) {
		t.Run(strings.Join(append([]string{"hermesctl"}, path...), "_"), func(t *testing.T) {
			check(t, append(path, "--no-such-flag")...)
			root := newRoot()
			c, _, err := root.Find(path)
			if err != nil || !c.Runnable() || c.Args == nil {
				return
			}
			if c.ValidateArgs(nil) != nil {
				check(t, path...)
			}
			many := make([]string, 20)
			for i := range many {
				many[i] = fmt.Sprintf("unit%d", i)
			}
			if c.ValidateArgs(many) != nil {
				check(t, append(path, many...)...)
			}
		})
	}
	for _, args := range [][]string{
		{"restart"},                // missing argument
		{"--bogus"},                // unknown flag, no command
		{"status", "--bogus"},      // unknown flag
		{"run", "--grace", "8"},    // bad flag value: a duration has a unit
		{"logs", "-n", "x", "web"}, // bad flag value
		{"who", "1", "2"},          // too many arguments
		{"release", "a", "b"},      // too many arguments
		{"version", "x"},           // an argument to a command that takes none
		{"bogus"},                  // unknown command
		{"export", "systemd"},      // required flag missing (--dir)
		{"completion", "tcsh"},     // an argument its Args refuses
	} {
		t.Run(strings.Join(args, "_"), func(t *testing.T) { check(t, args...) })
	}
}
