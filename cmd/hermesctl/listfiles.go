package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"text/tabwriter"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/internal/holds"
	"github.com/spf13/cobra"
)

// listFilesOptions are the arguments of list-unit-files, and where it
// prints.
type listFilesOptions struct {
	clientOptions
	patterns []string
}

func newListUnitFilesCmd(g *globals) *cobra.Command {
	opts := &listFilesOptions{clientOptions: clientOptions{g: g}}
	return opts.command(&cobra.Command{
		Use:   "list-unit-files [PATTERN...]",
		Short: "List the unit files and whether each is enabled; works without hermesd",
		Long: `List every unit file of the units directory, by name, with its state, and
how many were listed, as systemctl list-unit-files does. The directory is
that of the running hermesd (unless --units or HERMES_UNITS names one),
else --units, units: in hermes.yaml or the default.

A state is enabled, disabled (hermesctl disable: kept stopped until
enable) or masked (hermesctl mask: nothing starts it until unmask; it
says more than disabled). hermesd says which when it runs; without it,
the lists hermesd keeps in its state directory do.

PATTERNs (glob: *, ?, [a-z]) keep the files whose unit name or file name
matches one. -o json prints [{"unit", "file", "state"}, ...].`,
	}, func(ctx context.Context, args []string) error {
		opts.patterns = args
		return runListUnitFiles(ctx, opts)
	})
}

// unitFileState is one line of list-unit-files, and its -o json form.
type unitFileState struct {
	Unit  string `json:"unit"`
	File  string `json:"file"`
	State string `json:"state"` // enabled | disabled | masked
}

// runListUnitFiles lists the unit files whose unit or file name matches a
// pattern (all when none), with their state.
func runListUnitFiles(ctx context.Context, opts *listFilesOptions) error {
	for _, p := range opts.patterns {
		if _, err := path.Match(p, ""); err != nil {
			return &exitError{code: exitcode.Usage, err: fmt.Errorf("list-unit-files: pattern %q: %w", p, err)}
		}
	}
	g := opts.g
	daemon := g.daemonPaths(ctx)
	files, err := unitFiles(g.Units)
	if err != nil {
		return fmt.Errorf("list-unit-files: %w", err)
	}
	disabled, masked, err := heldUnits(ctx, g, daemon)
	if err != nil {
		return fmt.Errorf("list-unit-files: %w", err)
	}
	list := []unitFileState{}
	for _, f := range files {
		if !matchesAny(opts.patterns, f.name, filepath.Base(f.path)) {
			continue
		}
		state := "enabled"
		switch {
		case slices.Contains(masked, f.name):
			state = "masked"
		case slices.Contains(disabled, f.name):
			state = "disabled"
		}
		list = append(list, unitFileState{Unit: f.name, File: f.path, State: state})
	}
	return show(opts.streams, list, writeUnitFiles)
}

// matchesAny reports whether one of names matches one of patterns; every
// name does when there is no pattern.
func matchesAny(patterns []string, names ...string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		for _, n := range names {
			if ok, _ := path.Match(p, n); ok {
				return true
			}
		}
	}
	return false
}

// heldUnits are the units disabled and those masked: hermesd's word when
// daemon (it answered), else the holds file of the state directory, read
// and never changed (no file: none). A file hermesd would not trust is an
// error.
func heldUnits(ctx context.Context, g *globals, daemon bool) (disabled, masked []string, err error) {
	if daemon {
		st, err := askStatus(ctx, g)
		if err == nil {
			for _, u := range st.Units {
				if u.Disabled {
					disabled = append(disabled, u.Name)
				}
				if u.Masked {
					masked = append(masked, u.Name)
				}
			}
			return disabled, masked, nil
		}
		if !errors.Is(err, control.ErrNotRunning) {
			return nil, nil, err
		}
	}
	b, err := os.ReadFile(filepath.Join(g.State, holds.FileName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	h, err := holds.Parse(b, "")
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", filepath.Join(g.State, holds.FileName), err)
	}
	return h.Disabled, h.Masked, nil
}

// writeUnitFiles prints list as systemctl list-unit-files does: a table,
// then how many files were listed.
func writeUnitFiles(w io.Writer, list []unitFileState) {
	if len(list) > 0 {
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "UNIT FILE\tSTATE")
		for _, f := range list {
			fmt.Fprintf(tw, "%s\t%s\n", filepath.Base(f.File), f.State)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%d unit %s listed.\n", len(list), plural(len(list), "file", "files"))
}
