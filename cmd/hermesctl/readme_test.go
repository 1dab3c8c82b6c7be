package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestReadmeListsEveryCommand checks that the README's hermesctl command
// table has a row for every command of the tree (subcommands by their
// path: "export systemd"), so that a new command cannot go unlisted.
func TestReadmeListsEveryCommand(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n## hermesctl\n")
	if !ok {
		t.Fatal("README has no ## hermesctl section")
	}
	var cells strings.Builder
	for _, line := range strings.Split(rest, "\n") {
		if strings.HasPrefix(line, "#") {
			break
		}
		if first, _, ok := strings.Cut(strings.TrimPrefix(line, "| "), " | "); ok && strings.HasPrefix(line, "| `") {
			cells.WriteString(first + "\n")
		}
	}
	var walk func(c *cobra.Command, path string)
	walk = func(c *cobra.Command, path string) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			p := strings.TrimSpace(path + " " + sub.Name())
			if sub.HasAvailableSubCommands() {
				walk(sub, p)
				continue
			}
			if !regexp.MustCompile("`" + regexp.QuoteMeta(p) + "[` ]").MatchString(cells.String()) {
				t.Errorf("the README's hermesctl table has no row for %q", p)
			}
		}
	}
	walk(newRoot(), "")
}
