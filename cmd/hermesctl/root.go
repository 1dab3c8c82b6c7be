package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/hermes-units/hermes/internal/paths"
	"github.com/spf13/cobra"
)

// globals are the flags every command shares with hermesd: the same paths,
// with the same precedence (flag > HERMES_* env > default).
type globals struct {
	paths.Paths
	output string // "" (human) or "json"
}

// exitError carries a specific exit status out of a command; its message
// (if any) is printed once by main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func newRoot() *cobra.Command {
	g := &globals{Paths: paths.Defaults()}
	root := &cobra.Command{
		Use:           "hermesctl",
		Short:         "Steer hermesd, and run commands as owned children",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	f := root.PersistentFlags()
	f.StringVar(&g.Config, "config", envOr("HERMES_CONFIG", g.Config), "main config file (env HERMES_CONFIG)")
	f.StringVar(&g.Units, "units", envOr("HERMES_UNITS", g.Units), "units directory (env HERMES_UNITS)")
	f.StringVar(&g.State, "state", envOr("HERMES_STATE", g.State), "state directory: ledger, logs (env HERMES_STATE)")
	f.StringVar(&g.Socket, "socket", envOr("HERMES_SOCKET", g.Socket), "control socket of hermesd (env HERMES_SOCKET)")
	f.StringVarP(&g.output, "output", "o", "", "output format: json (default: text for humans)")
	root.AddCommand() // each command is added here, one per line
	root.AddCommand(newRunCmd(g))
	root.AddCommand(newValidateCmd(g))
	root.AddCommand(newStatusCmd(g))
	root.AddCommand(newStartCmd(g))
	root.AddCommand(newStopCmd(g))
	root.AddCommand(newRestartCmd(g))
	root.AddCommand(newReloadCmd(g))
	root.AddCommand(newLogsCmd(g))
	root.AddCommand(newTimeoutsCmd(g))
	return root
}

func envOr(key, def string) string {
	if v := strings.TrimSpace(os.Getenv(key)); v != "" {
		return v
	}
	return def
}
