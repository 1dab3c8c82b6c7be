package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/spf13/cobra"
)

// enable, disable and is-enabled: units kept stopped across restarts of
// hermesd and reboots (control.Enabler). Like start and stop, enable and
// disable act on the units one after the other, print one line per unit
// done and stop at the first failure.

func newDisableCmd(g *globals) *cobra.Command {
	return newCallCmd(g, "disable", "disabled", "Stop units and keep them stopped, across restarts of hermesd and reboots, until enable", disableHelp, disable)
}

const disableHelp = "Stop each unit (returning once its process group is empty, as stop does)\n" +
	"and keep it stopped until `hermesctl enable`: edits of its file, reloads,\n" +
	"`start`, its schedule (a job) and restarts of hermesd, clean or not, and\n" +
	"reboots leave it stopped. hermesd keeps the list in its state directory."

// disable disables unit; hermesd answers once it is stopped.
func disable(ctx context.Context, c *conn, unit string) error { return c.Disable(ctx, unit) }

// enableOptions are the flags and arguments of enable.
type enableOptions struct {
	unitsOptions
	noStart bool // --no-start
	noBlock bool // --no-block
}

func newEnableCmd(g *globals) *cobra.Command {
	opts := &enableOptions{unitsOptions: unitsOptions{clientOptions: clientOptions{g: g}, verb: "enable", done: "enabled"}}
	cmd := opts.command("enable [--no-start] UNIT...", "Undo disable, and start the units as start does", enableHelp,
		func(ctx context.Context) error { return runEnable(ctx, opts) })
	cmd.Flags().BoolVar(&opts.noStart, "no-start", false, "only enable: leave the units stopped until start")
	cmd.Flags().BoolVar(&opts.noBlock, "no-block", false, "start without waiting for the outcome")
	return cmd
}

const enableHelp = "Undo `hermesctl disable`, then start each unit as `start` does: wait until\n" +
	"it is ready, and fail with its error (--no-block: do not wait). A job is\n" +
	"not run: it fires on its schedule again. With --no-start the unit stays\n" +
	"stopped as after `stop`: until `start`, or until the next boot. Enabling\n" +
	"a unit that is not disabled only starts it."

// runEnable enables each unit in turn and, unless --no-start, starts it
// as start does.
func runEnable(ctx context.Context, opts *enableOptions) error {
	start := !opts.noStart
	return opts.each(ctx, start && !opts.noBlock, enableError, func(ctx context.Context, c *conn, unit string) (string, actionOutput, error) {
		return c.enable(ctx, unit, start)
	})
}

// enable enables unit and, with start, starts it as `hermesctl start`
// does (act: waiting for the outcome when c follows the events), unless
// it is a job. It returns the rest of the line to print after "enabled
// UNIT", and the -o json line.
func (c *conn) enable(ctx context.Context, unit string, start bool) (string, actionOutput, error) {
	out := actionOutput{ActionResult: control.ActionResult{Unit: unit, Action: "enable"}}
	if err := c.Enable(ctx, unit, false); err != nil || !start {
		return "", out, err
	}
	st, err := c.Status(ctx, unit)
	if err != nil {
		return "", out, err
	}
	if u, ok := unitIn(st, unit); ok && u.Job != nil {
		return " (a job: it runs on its schedule)", out, nil
	}
	line, started, err := c.act(ctx, control.ActionStart, unit)
	out.RunID, out.Reached, out.Waited = started.RunID, started.Reached, started.Waited
	return line, out, err
}

// enableError is unitError, and says what to do when hermesd is older than
// these commands.
func enableError(verb, unit string, timeout time.Duration, err error) error {
	var ce *control.Error
	if errors.As(err, &ce) && ce.Code == control.CodeNoRoute {
		return fmt.Errorf("%s %s: this hermesd does not know %s (it is older than hermesctl); restart hermesd from the same build", verb, unit, verb)
	}
	return unitError(verb, unit, timeout, err)
}

func newIsEnabledCmd(g *globals) *cobra.Command {
	return newIsCmdOf(g, "is-enabled", "Say whether units are enabled; exit 0 when every one is",
		"Print \"enabled\", \"disabled\" or \"masked\" (hermesctl mask) for each\n"+
			"unit, one line per unit in the order given, and exit 0 when every unit\n"+
			"is enabled, 1 otherwise. A unit hermesd does not know is an error\n"+
			"(exit 1).", runIsEnabled)
}

// runIsEnabled prints whether each unit named is enabled, and answers yes
// when every one is.
func runIsEnabled(ctx context.Context, opts *isOptions) error {
	words, err := enabledWords(ctx, opts.g, opts.units)
	if err != nil {
		return fmt.Errorf("is-enabled: %w", err)
	}
	all := true
	for _, w := range words {
		all = all && w == "enabled"
	}
	return opts.print(all, words)
}

// enabledWords asks hermesd whether each unit named is enabled, disabled
// or masked (masked says more than disabled), in order. A name with two
// rows (a unit and the group it released) is disabled or masked when the
// unit is. A name hermesd does not know is an error naming it.
func enabledWords(ctx context.Context, g *globals, names []string) ([]string, error) {
	st, err := statusOf(ctx, g, names)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	dis, masked := map[string]bool{}, map[string]bool{}
	for _, u := range st.Units {
		known[u.Name] = true
		dis[u.Name] = dis[u.Name] || u.Disabled
		masked[u.Name] = masked[u.Name] || u.Masked
	}
	out := make([]string, len(names))
	for i, n := range names {
		switch {
		case !known[n]:
			return nil, fmt.Errorf("unit %s: %w; `hermesctl status` lists the units hermesd knows", n, control.ErrUnknownUnit)
		case masked[n]:
			out[i] = "masked"
		case dis[n]:
			out[i] = "disabled"
		default:
			out[i] = "enabled"
		}
	}
	return out, nil
}
