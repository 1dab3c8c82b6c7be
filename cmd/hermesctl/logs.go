package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"syscall"

	"github.com/hermes-units/hermes/internal/logfile"
	"github.com/spf13/cobra"
)

func newLogsCmd(g *globals) *cobra.Command {
	var (
		follow bool
		lines  int
	)
	cmd := &cobra.Command{
		Use:   "logs UNIT",
		Short: "Print a unit's log (-f to follow it)",
		Long: "Print the last lines of a unit's log. hermesd says where the log is; hermesctl\n" +
			"reads the file itself. -f keeps printing what is appended, across rotations,\n" +
			"until interrupted. -n -1 prints the whole file.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON, err := g.jsonOutput(); err != nil {
				return err
			} else if asJSON {
				return errors.New("logs prints the log itself and has no JSON form; drop -o json")
			}
			unit := args[0]
			c, err := dial(g)
			if err != nil {
				return err
			}
			path, err := c.LogPath(cmd.Context(), unit)
			c.Close()
			if err != nil {
				return unitError("logs", unit, 0, err)
			}
			// An interrupt ends -f cleanly, with exit status 0.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			err = logfile.Tail(ctx, path, lines, follow, cmd.OutOrStdout())
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("logs %s: no log yet at %s (the unit has not written anything)", unit, path)
			}
			if err != nil {
				return fmt.Errorf("logs %s: %w", unit, err)
			}
			return nil
		},
		ValidArgsFunction: completeUnits(g),
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing what is appended")
	cmd.Flags().IntVarP(&lines, "lines", "n", 10, "print the last N lines (-1: all)")
	return cmd
}
