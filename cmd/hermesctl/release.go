package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/hermes-units/hermes/control"
	"github.com/spf13/cobra"
)

// releaseOptions are the argument of release, and where it prints.
type releaseOptions struct {
	g    *globals
	unit string
	streams
}

func newReleaseCmd(g *globals) *cobra.Command {
	opts := &releaseOptions{g: g}
	return &cobra.Command{
		Use:   "release UNIT",
		Short: "Give a unit's group up: it will outlive hermesd",
		Long: "release UNIT unregisters the unit's process group from the death supervisor,\n" +
			"so that it outlives hermesd, and marks it released in the ledger. hermesd stops\n" +
			"managing it: no restart, and `hermesctl start UNIT` is refused while the released\n" +
			"group still runs. Take it back with `hermesctl adopt --pgid N`.",
		Args: cobra.ExactArgs(1),
		RunE: runE(g, &opts.streams, func(ctx context.Context, args []string) error {
			opts.unit = args[0]
			return runRelease(ctx, opts)
		}),
		ValidArgsFunction: completeUnits(g),
	}
}

// runRelease asks hermesd to release the unit's group, and prints the
// group released.
func runRelease(ctx context.Context, opts *releaseOptions) error {
	c, err := dial(opts.g)
	if err != nil {
		return err
	}
	defer c.Close()
	r, err := c.Release(ctx, opts.unit)
	if err != nil {
		if errors.Is(err, control.ErrUnknownUnit) {
			return fmt.Errorf("release %s: %w; `hermesctl status` lists the units hermesd knows", opts.unit, err)
		}
		return fmt.Errorf("release %s: %w", opts.unit, err)
	}
	if opts.json {
		return writeJSON(opts.out, r)
	}
	fmt.Fprintf(opts.out, "released %s: group %d (pid %d) will outlive hermesd\n", inert(r.Unit), r.PGID, r.PID)
	return nil
}
