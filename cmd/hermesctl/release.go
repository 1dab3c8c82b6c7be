package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/spf13/cobra"
)

// releaseOptions are the argument of release, and where it prints.
type releaseOptions struct {
	clientOptions
	unit string
}

func newReleaseCmd(g *globals) *cobra.Command {
	opts := &releaseOptions{clientOptions: clientOptions{g: g}}
	var names []string
	return opts.unitsCommand(&cobra.Command{
		Use:   "release UNIT",
		Short: "Give a unit's group up: it will outlive hermesd",
		Long: "release UNIT unregisters the unit's process group from the death supervisor,\n" +
			"so that it outlives hermesd, and marks it released in the ledger. hermesd stops\n" +
			"managing it: no restart, and `hermesctl start UNIT` is refused while the released\n" +
			"group still runs. Take it back with `hermesctl adopt --pgid N`.",
		Args: cobra.ExactArgs(1),
	}, &names, func(ctx context.Context) error {
		if len(names) != 1 {
			return &exitError{code: exitcode.Usage, err: fmt.Errorf("release takes one unit; the pattern matches %s", strings.Join(names, ", "))}
		}
		opts.unit = names[0]
		return runRelease(ctx, opts)
	})
}

// runRelease asks hermesd to release the unit's group, and prints the
// group released.
func runRelease(ctx context.Context, opts *releaseOptions) error {
	return withClient(opts.g, func(c *control.Client) error {
		r, err := c.Release(ctx, opts.unit)
		if err != nil {
			if errors.Is(err, control.ErrUnknownUnit) {
				return fmt.Errorf("release %s: %w; `hermesctl status` lists the units hermesd knows", opts.unit, err)
			}
			return fmt.Errorf("release %s: %w", opts.unit, err)
		}
		return show(opts.streams, r, func(w io.Writer, r control.Released) {
			fmt.Fprintf(w, "released %s: group %d (pid %d) will outlive hermesd\n", r.Unit, r.PGID, r.PID)
		})
	})
}
