package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// -o/--output is a global flag, and which command writes which format is
// known here alone. checkOutput runs before every command (the root's
// PersistentPreRunE): a command with no JSON form refuses -o json before it
// does anything, with exit 2 (exitcode.Usage), so that a script never takes text
// for JSON; every other command writes JSON (g.jsonOutput tells it).

// jsonForms maps every runnable command, by its path below hermesctl, to
// why it has no JSON form in the mode its flags ask for, and what to run
// instead: "" when it has one. TestJSONFormsCoverEveryCommand keeps the
// table and the commands in step.
var jsonForms = map[string]func(*cobra.Command) string{
	"adopt":              withJSON,
	"cat":                withoutJSON("it prints the unit files as they are"),
	"completion":         withoutJSON("it prints a shell script"),
	"disable":            withJSON,
	"edit":               withoutJSON("it opens an editor on the unit file; `hermesctl validate -o json FILE` checks one"),
	"enable":             withJSON,
	"events":             withJSON,
	"export launchd":     withJSON,
	"export systemd":     withJSON,
	"import":             withJSON,
	"is-active":          withJSON,
	"is-enabled":         withJSON,
	"is-failed":          withJSON,
	"kill":               withJSON,
	"list-unit-files":    withJSON,
	"logs":               withJSON,
	"mask":               withJSON,
	"proxy env":          withJSON,
	"proxy rotate-token": withJSON,
	"release":            withJSON,
	"reload":             withJSON,
	"reset-failed":       withJSON,
	"restart":            withJSON,
	"run":                withoutJSON("what it prints is the command's own output"),
	"show":               withoutJSON("its KEY=value lines are for scripts already; `hermesctl status -o json UNIT` has the same fields typed"),
	"start":              withJSON,
	"status":             statusJSON,
	"stop":               withJSON,
	"timeouts explain":   withJSON,
	"top":                withoutJSON("it is a full-screen view; for a script, follow `hermesctl events -f -o json`"),
	"unmask":             withJSON,
	"validate":           withJSON,
	"version":            withJSON,
	"who":                withJSON,
}

func withJSON(*cobra.Command) string { return "" }

func withoutJSON(why string) func(*cobra.Command) string {
	return func(*cobra.Command) string { return why }
}

// statusJSON: status writes JSON, but not the table --watch redraws.
func statusJSON(cmd *cobra.Command) string {
	if watch, _ := cmd.Flags().GetBool("watch"); watch {
		return "--watch redraws the table for a terminal; for a script, follow `hermesctl events -f -o json`"
	}
	return ""
}

// checkOutput refuses an output format cmd does not write. A command
// missing from jsonForms (help, cobra's completion requests) writes no
// output of its own to refuse.
func checkOutput(cmd *cobra.Command, format string) error {
	switch format {
	case "", "text":
		return nil
	case "json":
	default:
		return fmt.Errorf("unknown output format %q; use -o json, or nothing for text", format)
	}
	path := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
	why, ok := jsonForms[path]
	if !ok {
		return nil
	}
	if w := why(cmd); w != "" {
		return fmt.Errorf("%s: -o json is not supported; %s", path, w)
	}
	return nil
}
