package main

import (
	"errors"
	"fmt"

	"github.com/hermes-units/hermes/control"
	"github.com/spf13/cobra"
)

func newReleaseCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "release UNIT",
		Short: "Give a unit's group up: it will outlive hermesd",
		Long: "release UNIT unregisters the unit's process group from the death supervisor,\n" +
			"so that it outlives hermesd, and marks it released in the ledger. hermesd stops\n" +
			"managing it: no restart, and `hermesctl start UNIT` is refused while the released\n" +
			"group still runs. Take it back with `hermesctl adopt --pgid N`.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := g.jsonOutput()
			if err != nil {
				return err
			}
			c, err := dial(g)
			if err != nil {
				return err
			}
			defer c.Close()
			r, err := c.Release(cmd.Context(), args[0])
			if err != nil {
				if errors.Is(err, control.ErrUnknownUnit) {
					return fmt.Errorf("release %s: %w; `hermesctl status` lists the units hermesd knows", args[0], err)
				}
				return fmt.Errorf("release %s: %w", args[0], err)
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), r)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "released %s: group %d (pid %d) will outlive hermesd\n", inert(r.Unit), r.PGID, r.PID)
			return nil
		},
		ValidArgsFunction: completeUnits(g),
	}
}
