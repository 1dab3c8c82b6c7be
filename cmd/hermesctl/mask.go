package main

import (
	"context"

	"github.com/spf13/cobra"
)

// mask and unmask: units nothing may start (control.Masker), across
// restarts of hermesd and reboots. Like disable and enable they act on the
// units one after the other, print one line per unit done and stop at the
// first failure.

// maskOptions are the flags and arguments of mask.
type maskOptions struct {
	unitsOptions
	now bool // --now
}

func newMaskCmd(g *globals) *cobra.Command {
	opts := &maskOptions{unitsOptions: unitsOptions{clientOptions: clientOptions{g: g}, verb: "mask", done: "masked"}}
	cmd := opts.command("mask [--now] UNIT...", "Forbid every start of units until unmask (--now: stop them too)", maskHelp,
		func(ctx context.Context) error { return runMask(ctx, opts) })
	cmd.Flags().BoolVar(&opts.now, "now", false, "stop the units too, returning once each process group is empty")
	return cmd
}

const maskHelp = "Mark each unit masked: until `hermesctl unmask`, nothing starts it.\n" +
	"start, restart and enable of it are refused, and so are start and\n" +
	"restart of a unit that requires it; its schedule (a job) does not fire\n" +
	"and reloads leave it stopped. The mark outlives restarts of hermesd and\n" +
	"reboots. Unlike disable, mask alone does not stop a running unit (as\n" +
	"systemctl mask); with --now it is stopped too, as `stop` does (as\n" +
	"systemctl mask --now)."

// runMask masks each unit in turn; with --now hermesd answers once it is
// stopped.
func runMask(ctx context.Context, opts *maskOptions) error {
	return opts.eachCall(ctx, "", func(ctx context.Context, c *conn, unit string) error { return c.Mask(ctx, unit, opts.now) })
}

func newUnmaskCmd(g *globals) *cobra.Command {
	return newCallCmd(g, "unmask", "unmasked", "Undo mask; the units are not started", unmaskHelp,
		func(ctx context.Context, c *conn, unit string) error { return c.Unmask(ctx, unit) })
}

const unmaskHelp = "Undo `hermesctl mask`. Nothing is started: a unit not running stays\n" +
	"stopped as after `stop`, until `hermesctl start` (or the next boot); a\n" +
	"job fires on its schedule again; a disabled unit stays disabled.\n" +
	"Unmasking a unit that is not masked changes nothing."
