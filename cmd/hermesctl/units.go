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
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/spf13/cobra"
)

// newStartCmd, newStopCmd and newRestartCmd steer units one after the other;
// each prints one line per unit done and stops at the first failure.
// start and restart wait for each unit's outcome (wait.go) unless
// --no-block; stop returns once the unit's group is empty, and those of
// the units that require it, which it stops too.
func newStartCmd(g *globals) *cobra.Command {
	return newActionCmd(g, control.ActionStart, "started",
		"Start units and wait until each is ready (running, for a unit without a probe; done, for a oneshot; its run ended, for a job)")
}

func newStopCmd(g *globals) *cobra.Command {
	return newActionCmd(g, control.ActionStop, "stopped",
		"Stop units, and the units that require them; returns once their process groups are empty")
}

func newRestartCmd(g *globals) *cobra.Command {
	return newActionCmd(g, control.ActionRestart, "restarted", "Restart units and wait until each is ready again, as start does")
}

// actionOptions are the flags and arguments of start, stop and restart.
type actionOptions struct {
	unitsOptions
	action  control.Action
	noBlock bool // --no-block (start, restart)
}

func newActionCmd(g *globals, a control.Action, done, short string) *cobra.Command {
	opts := &actionOptions{unitsOptions: unitsOptions{clientOptions: clientOptions{g: g}, verb: string(a), done: done}, action: a}
	cmd := opts.command(opts.verb+" UNIT...", short, "", func(ctx context.Context) error { return runAction(ctx, opts) })
	if a != control.ActionStop {
		cmd.Flags().BoolVar(&opts.noBlock, "no-block", false, "return once hermesd has begun the "+opts.verb+", without waiting for the outcome")
	}
	return cmd
}

// runAction does opts.action to each unit in turn; start and restart wait
// for each outcome unless --no-block.
func runAction(ctx context.Context, opts *actionOptions) error {
	wait := opts.action != control.ActionStop && !opts.noBlock
	return opts.each(ctx, wait, unitError, func(ctx context.Context, c *conn, unit string) (string, actionOutput, error) {
		return c.act(ctx, opts.action, unit)
	})
}

// unitsOptions are what the commands that act on units one after the
// other share (start, stop, restart, enable, disable): the units named,
// --timeout, and where they print.
type unitsOptions struct {
	clientOptions
	verb, done string // "start", and the word of a unit done: "started"
	units      []string
	timeout    time.Duration // --timeout: the bound of each unit's action and wait; 0: none
}

// command is the command of o: one or more units named, completed from
// hermesd's, and --timeout; run is called with the units and streams set.
func (o *unitsOptions) command(use, short, long string, run func(context.Context) error) *cobra.Command {
	cmd := o.unitsCommand(&cobra.Command{Use: use, Short: short, Long: long, Args: cobra.MinimumNArgs(1)}, &o.units, run)
	cmd.Flags().DurationVar(&o.timeout, "timeout", 0, "give up waiting after this long per unit (0: wait as long as it takes)")
	return cmd
}

// each connects to hermesd, follows its events when wait (before the
// first action: see conn.follow), then does do to every unit in order,
// each under --timeout, printing "<done> <unit><line>" after each (or the
// actionOutput, one JSON object a line, with -o json). It stops at the
// first error, worded by fail.
func (o *unitsOptions) each(ctx context.Context, wait bool, fail func(verb, unit string, timeout time.Duration, err error) error,
	do func(ctx context.Context, c *conn, unit string) (string, actionOutput, error)) error {
	c, err := connect(o.g)
	if err != nil {
		return err
	}
	defer c.Close()
	if wait {
		if err := c.follow(ctx, o.verb, o.progress()); err != nil {
			return err
		}
	}
	enc := json.NewEncoder(o.out)
	for _, unit := range o.units {
		var line string
		var res actionOutput
		err := withTimeout(ctx, o.timeout, func(ctx context.Context) error {
			var err error
			line, res, err = do(ctx, c, unit)
			return err
		})
		if err != nil {
			return fail(o.verb, unit, o.timeout, err)
		}
		if o.json {
			if err := enc.Encode(res); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(o.out, "%s %s%s\n", o.done, inert(unit), inert(line))
	}
	return nil
}

// eachCall is each for the commands whose call on a unit is one request
// (disable, mask, unmask, kill, reset-failed, reload): no outcome to wait
// for, line after "<done> <unit>" on every line, and enableError's words.
func (o *unitsOptions) eachCall(ctx context.Context, line string, call func(ctx context.Context, c *conn, unit string) error) error {
	return o.each(ctx, false, enableError, func(ctx context.Context, c *conn, unit string) (string, actionOutput, error) {
		return line, actionOutput{ActionResult: control.ActionResult{Unit: unit, Action: o.verb}}, call(ctx, c, unit)
	})
}

// newCallCmd is the command "verb UNIT..." whose call on each unit in turn
// is one request (eachCall); done is the word of a unit done.
func newCallCmd(g *globals, verb, done, short, long string, call func(ctx context.Context, c *conn, unit string) error) *cobra.Command {
	opts := &unitsOptions{clientOptions: clientOptions{g: g}, verb: verb, done: done}
	return opts.command(verb+" UNIT...", short, long, func(ctx context.Context) error { return opts.eachCall(ctx, "", call) })
}

// actionOutput is one line of -o json: the daemon's answer, and for a
// start or restart waited for, where the unit got to.
type actionOutput struct {
	control.ActionResult
	Reached string        `json:"reached,omitempty"`   // "ready: tcp …", "running", "done", "run …: success"
	Waited  time.Duration `json:"waited_ns,omitempty"` // from the action sent to its outcome
}

// act does a to unit and, when c follows hermesd's events, waits for its
// outcome. It returns the rest of the line to print after "started UNIT".
func (c *conn) act(ctx context.Context, a control.Action, unit string) (string, actionOutput, error) {
	var prior *control.Job
	wt := c.waiter
	if wt != nil {
		// A job's run before the action: a start that begins none now
		// (the job waits for other units) waits for the next one.
		st, err := c.Status(ctx, unit)
		if err != nil {
			return "", actionOutput{}, err
		}
		if u, ok := unitIn(st, unit); ok {
			prior = u.Job
		}
	}
	began := time.Now()
	res, err := c.Act(ctx, unit, a)
	out := actionOutput{ActionResult: res}
	if err != nil {
		return "", out, err
	}
	if a == control.ActionStop {
		return tookDown(res.Stopped), out, nil
	}
	if wt == nil {
		return " (not waiting: --no-block)", out, nil
	}
	reached, err := wt.wait(ctx, &watch{unit: unit, res: res, prior: prior, began: began})
	if err != nil {
		return "", out, err
	}
	out.Reached, out.Waited = reached, time.Since(began)
	return fmt.Sprintf(" (%s, after %s)", reached, elapsed(out.Waited)), out, nil
}

// tookDown words the units a stop took down with the unit: " (and api,
// which requires it)".
func tookDown(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return " (and " + names[0] + ", which requires it)"
	}
	return " (and " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] + ", which require it)"
}

// reloadOptions are the flags of reload, and where it prints.
type reloadOptions struct {
	clientOptions
	dryRun bool     // --dry-run
	units  []string // reload UNIT...: the units to reload (reload.go); none: re-read the unit files
}

func newReloadCmd(g *globals) *cobra.Command {
	opts := &reloadOptions{clientOptions: clientOptions{g: g}}
	cmd := opts.unitsCommand(&cobra.Command{
		Use:   "reload [--dry-run] | reload UNIT...",
		Short: "Re-read the unit files now and print the plan; with units, ask each to reload",
		Long: "Re-read the unit files now and print what changed: units started, stopped,\n" +
			"restarted and kept, and files that did not load (their last good version\n" +
			"keeps running). With --dry-run nothing is changed. Exits 1 when a file did not load.\n\n" +
			"With units named, ask each running unit to reload as its file says:\n" +
			"reload_signal: is sent to its main process, or the reload: command is\n" +
			"run and waited for. A unit whose file has neither is an error (exit 1).",
		Args: cobra.ArbitraryArgs,
	}, &opts.units, func(ctx context.Context) error {
		if len(opts.units) > 0 {
			return runUnitReload(ctx, opts, opts.units)
		}
		return runReload(ctx, opts)
	})
	cmd.Flags().BoolVar(&opts.dryRun, "dry-run", false, "only print what a reload would do")
	return cmd
}

// runReload asks hermesd to re-read its units (or only to say what it
// would do) and prints the plan; exit 1 when a file did not load.
func runReload(ctx context.Context, opts *reloadOptions) error {
	return withClient(opts.g, func(c *control.Client) error {
		plan, err := c.Reload(ctx, opts.dryRun)
		if err != nil {
			return fmt.Errorf("reload: %w", err)
		}
		if err := show(opts.streams, plan, func(w io.Writer, p control.Plan) { writePlan(w, p, opts.dryRun) }); err != nil {
			return err
		}
		if n := len(plan.Errors); n > 0 {
			return &exitError{code: exitcode.Failure, err: fmt.Errorf("reload: %d %s did not load (listed above); fix and save, or run hermesctl validate", n, plural(n, "file", "files"))}
		}
		return nil
	})
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
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
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
		return fmt.Errorf("%s %s: no outcome within --timeout %v; hermesd may still be at it (see `hermesctl status %s`)", verb, unit, timeout, unit)
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

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
