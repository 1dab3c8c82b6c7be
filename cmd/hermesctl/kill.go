package main

import (
	"context"
	"fmt"
	"syscall"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/units"
	"github.com/spf13/cobra"
)

// kill sends a signal to running units (control.Signaller): to every
// process of each, or to its main process alone. Like start and stop it
// acts on the units one after the other, prints one line per unit done
// and stops at the first failure.

// killOptions are the flags and arguments of kill.
type killOptions struct {
	unitsOptions
	signal string // --signal, as the user wrote it
	whom   string // --whom
}

func newKillCmd(g *globals) *cobra.Command {
	opts := &killOptions{unitsOptions: unitsOptions{clientOptions: clientOptions{g: g}, verb: "kill", done: "signalled"}}
	cmd := opts.command("kill [--signal S] [--whom main|all] UNIT...", "Send a signal to the processes of running units", killHelp,
		func(ctx context.Context) error { return runKill(ctx, opts) })
	cmd.Flags().StringVarP(&opts.signal, "signal", "s", "TERM", "the signal: a name (HUP, SIGHUP) or a number")
	cmd.Flags().StringVar(&opts.whom, "whom", string(control.WhomAll), "all: every process of the unit; main: its main process alone")
	return cmd
}

const killHelp = "Send a signal (--signal, TERM unless said) to every process of each unit\n" +
	"(its cgroup, or its process group and the processes that left it), or\n" +
	"with --whom main to its main process alone (a forking unit's daemon,\n" +
	"else the process hermes started). It is a signal, not a stop: a unit\n" +
	"that dies of it has exited, and its restart policy applies (stop keeps\n" +
	"a unit stopped). An unknown signal or --whom is a usage error (exit 2);\n" +
	"a unit that is not running is an error (exit 1)."

// runKill checks the signal and --whom before anything is sent, then
// signals each unit in turn.
func runKill(ctx context.Context, opts *killOptions) error {
	sig, err := units.ParseSignal(opts.signal)
	if err != nil {
		return &exitError{code: exitcode.Usage, err: fmt.Errorf("kill: --signal: %w", err)}
	}
	whom, err := control.ParseWhom(opts.whom)
	if err != nil {
		return &exitError{code: exitcode.Usage, err: fmt.Errorf("kill: --whom: %w", err)}
	}
	line := fmt.Sprintf(" (%s to its main process)", sig)
	if whom == control.WhomAll {
		line = fmt.Sprintf(" (%s to every process)", sig)
	}
	return opts.eachCall(ctx, line, func(ctx context.Context, c *conn, unit string) error {
		return c.Kill(ctx, unit, syscall.Signal(sig), whom)
	})
}
