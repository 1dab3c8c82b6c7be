package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/spf13/cobra"
)

// newStartCmd, newStopCmd and newRestartCmd steer units one after the other;
// each prints one line per unit done and stops at the first failure.
func newStartCmd(g *globals) *cobra.Command {
	return newActionCmd(g, "start", "started", "Start units", (*control.Client).Start)
}

func newStopCmd(g *globals) *cobra.Command {
	return newActionCmd(g, "stop", "stopped", "Stop units; returns once each unit's process group is empty", (*control.Client).Stop)
}

func newRestartCmd(g *globals) *cobra.Command {
	return newActionCmd(g, "restart", "restarted", "Restart units", (*control.Client).Restart)
}

func newActionCmd(g *globals, verb, done, short string, do func(*control.Client, context.Context, string) error) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   verb + " UNIT...",
		Short: short,
		Args:  cobra.MinimumNArgs(1),
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
			out := cmd.OutOrStdout()
			for _, unit := range args {
				if err := withTimeout(cmd.Context(), timeout, func(ctx context.Context) error { return do(c, ctx, unit) }); err != nil {
					return unitError(verb, unit, timeout, err)
				}
				if asJSON {
					if err := json.NewEncoder(out).Encode(control.ActionResult{Unit: unit, Action: verb}); err != nil {
						return err
					}
					continue
				}
				fmt.Fprintf(out, "%s %s\n", done, unit)
			}
			return nil
		},
		ValidArgsFunction: completeUnits(g),
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up waiting after this long per unit (0: wait as long as it takes)")
	return cmd
}

func newReloadCmd(g *globals) *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "reload",
		Short: "Re-read the unit files now and print the plan",
		Long: "Re-read the unit files now and print what changed: units started, stopped,\n" +
			"restarted and kept, and files that did not load (their last good version\n" +
			"keeps running). With --dry-run nothing is changed. Exits 1 when a file did not load.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := g.jsonOutput()
			if err != nil {
				return err
			}
			c, err := dial(g)
			if err != nil {
				return err
			}
			defer c.Close()
			plan, err := c.Reload(cmd.Context(), dryRun)
			if err != nil {
				return fmt.Errorf("reload: %w", err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSON(out, plan); err != nil {
					return err
				}
			} else {
				inertAll(&plan)
				writePlan(out, plan, dryRun)
			}
			if n := len(plan.Errors); n > 0 {
				return &exitError{code: 1, err: fmt.Errorf("reload: %d %s did not load (listed above); fix and save, or run hermesctl validate", n, plural(n, "file", "files"))}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "only print what a reload would do")
	return cmd
}

func writePlan(w io.Writer, p control.Plan, dryRun bool) {
	if dryRun {
		fmt.Fprintln(w, "dry run: nothing was changed")
	}
	for _, l := range []struct {
		what  string
		units []string
	}{{"start", p.Start}, {"stop", p.Stop}, {"restart", p.Restart}, {"keep", p.Keep}} {
		list := "-"
		if len(l.units) > 0 {
			list = strings.Join(l.units, " ")
		}
		fmt.Fprintf(w, "%-8s %s\n", l.what+":", list)
	}
	if len(p.Order) > 0 {
		fmt.Fprintln(w, "order:")
		for i, s := range p.Order {
			waits := ""
			if len(s.Waits) > 0 {
				waits = ", once " + strings.Join(s.Waits, " and ")
			}
			fmt.Fprintf(w, "  %d. %s (%s)%s\n", i+1, s.Unit, s.Type, waits)
		}
	}
	if len(p.Errors) > 0 {
		fmt.Fprintln(w, "errors:")
		for _, e := range p.Errors {
			fmt.Fprintf(w, "  %s\n", configError(e))
		}
	}
}

// dial connects to hermesd at the --socket path.
func dial(g *globals) (*control.Client, error) {
	return control.Dial(g.Socket)
}

// jsonOutput reports whether -o json was asked for, and refuses formats it
// does not know.
func (g *globals) jsonOutput() (bool, error) {
	switch g.output {
	case "", "text":
		return false, nil
	case "json":
		return true, nil
	}
	return false, fmt.Errorf("unknown output format %q; use -o json, or nothing for text", g.output)
}

// withTimeout runs f under ctx, bounded by timeout when it is positive.
func withTimeout(ctx context.Context, timeout time.Duration, f func(context.Context) error) error {
	if timeout <= 0 {
		return f(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return f(ctx)
}

// unitError words a failed action on one unit.
func unitError(verb, unit string, timeout time.Duration, err error) error {
	switch {
	case errors.Is(err, control.ErrNotRunning), errors.Is(err, control.ErrDenied):
		return err
	case errors.Is(err, control.ErrUnknownUnit):
		return fmt.Errorf("%s %s: %w; `hermesctl status` lists the units hermesd knows", verb, unit, err)
	case errors.Is(err, context.DeadlineExceeded) && timeout > 0:
		return fmt.Errorf("%s %s: no answer within --timeout %v; hermesd may still be at it (see `hermesctl status %s`)", verb, unit, timeout, unit)
	}
	return fmt.Errorf("%s %s: %w", verb, unit, err)
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func configError(e control.ConfigError) string {
	return e.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
