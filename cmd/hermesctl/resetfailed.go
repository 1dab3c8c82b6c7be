package main

import (
	"context"

	"github.com/hermes-units/hermes/control"
	"github.com/spf13/cobra"
)

// reset-failed forgets units' failures (control.FailureResetter): the
// units named, or with none every failed unit. Like start and stop it acts
// on the units one after the other, prints one line per unit done and
// stops at the first failure.

func newResetFailedCmd(g *globals) *cobra.Command {
	opts := &unitsOptions{clientOptions: clientOptions{g: g}, verb: "reset-failed", done: "reset"}
	return opts.unitsCommand(&cobra.Command{
		Use:   "reset-failed [UNIT...]",
		Short: "Forget the failure of units (every failed unit when none is named)",
		Long: "Make each failed unit inactive, its error, restart count and start-limit\n" +
			"history forgotten, and the restart it was waiting for cancelled, as\n" +
			"systemctl reset-failed does. Nothing is started: `hermesctl start` does\n" +
			"that. With no unit named, every failed unit; a unit that is not failed\n" +
			"is left as it is.",
		Args: cobra.ArbitraryArgs,
	}, &opts.units, func(ctx context.Context) error { return runResetFailed(ctx, opts) })
}

// runResetFailed resets the units of opts, or every failed one.
func runResetFailed(ctx context.Context, opts *unitsOptions) error {
	if len(opts.units) == 0 {
		st, err := statusOf(ctx, opts.g, nil)
		if err != nil {
			return err
		}
		for _, u := range st.Units {
			if u.State == control.StateFailed {
				opts.units = append(opts.units, u.Name)
			}
		}
	}
	return opts.eachCall(ctx, "", func(ctx context.Context, c *conn, unit string) error { return c.ResetFailed(ctx, unit) })
}
