package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// catOptions are the arguments of cat, and where it prints.
type catOptions struct {
	clientOptions
	units []string
}

func newCatCmd(g *globals) *cobra.Command {
	opts := &catOptions{clientOptions: clientOptions{g: g}}
	return opts.unitsCommandOf(&cobra.Command{
		Use:   "cat UNIT...",
		Short: "Print units' files as they are on disk; works without hermesd",
		Long: `Print the unit file of each unit, as it is on disk, after a "# PATH" line
naming it, as systemctl cat does; a blank line separates units. The files
are those of the units directory of the running hermesd (unless --units
or HERMES_UNITS names one), else of --units, units: in hermes.yaml or the
default: what hermesd runs is the last version of these that loaded
(hermesctl validate checks them). A unit with no file there is an error
(exit 1), once the others are printed.`,
		Args: cobra.MinimumNArgs(1),
	}, &opts.units, fileUnits, func(ctx context.Context) error { return runCat(ctx, opts) })
}

// runCat prints the file of each unit in turn, and fails, once all are
// printed, naming those with no file.
func runCat(ctx context.Context, opts *catOptions) error {
	g := opts.g
	g.daemonPaths(ctx)
	files, err := unitFiles(g.Units)
	if err != nil {
		return fmt.Errorf("cat: %w", err)
	}
	var missing []string
	printed := false
	for _, unit := range opts.units {
		found := false
		for _, f := range files {
			if f.name != unit {
				continue
			}
			found = true
			b, err := os.ReadFile(f.path)
			if err != nil {
				return fmt.Errorf("cat %s: %w", unit, err)
			}
			if printed {
				fmt.Fprintln(opts.out)
			}
			printed = true
			fmt.Fprintf(opts.out, "# %s\n%s", inert(f.path), b)
			if len(b) > 0 && b[len(b)-1] != '\n' {
				fmt.Fprintln(opts.out)
			}
		}
		if !found {
			missing = append(missing, unit)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("cat: no unit file for %s in %s (NAME.yaml or NAME.yml); `hermesctl list-unit-files` lists them", strings.Join(missing, ", "), g.Units)
	}
	return nil
}
