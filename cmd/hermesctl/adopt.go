package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/spf13/cobra"
)

// adoptOptions are the flags and argument of adopt, and where it prints.
type adoptOptions struct {
	clientOptions
	pid     string // the PID argument, as given; "" with --pgid or --orphans
	pgid    int    // --pgid
	as      string // --as
	orphans bool   // --orphans
	yes     bool   // --yes
}

func newAdoptCmd(g *globals) *cobra.Command {
	opts := &adoptOptions{clientOptions: clientOptions{g: g}}
	cmd := opts.command(&cobra.Command{
		Use:   "adopt PID | --pgid N [--as NAME] | --orphans [--yes]",
		Short: "Make hermesd own a process group something else started: it then dies with hermesd",
		Long: "adopt PID and adopt --pgid N make hermesd own that process group: it is\n" +
			"registered with the death supervisor, recorded in the ledger, shown in status\n" +
			"as adopted, stopped by `hermesctl stop NAME`, and killed if hermesd dies.\n" +
			"hermesd refuses pgid <= 1, its own and its supervisor's groups, your own group,\n" +
			"any group holding an ancestor of this hermesctl (your shell) or of hermesd,\n" +
			"other users' processes (unless it runs as root), exited processes, and groups\n" +
			"another live owner holds.\n\n" +
			"adopt --orphans lists the leftovers of dead owners found in the ledger with\n" +
			"their evidence; with --yes it adopts those whose identity still matches.\n" +
			"Processes the ledger does not know are never adopted by this sweep.",
		Args: func(_ *cobra.Command, args []string) error {
			return opts.check(args)
		},
	}, func(ctx context.Context, args []string) error {
		if len(args) == 1 {
			opts.pid = args[0]
		}
		return runAdopt(ctx, opts)
	})
	f := cmd.Flags()
	f.IntVar(&opts.pgid, "pgid", 0, "adopt this process group")
	f.StringVar(&opts.as, "as", "", "unit name of the adopted group (default: the leader's command and the pgid)")
	f.BoolVar(&opts.orphans, "orphans", false, "list the leftovers of dead owners found in the ledger")
	f.BoolVar(&opts.yes, "yes", false, "with --orphans: adopt those whose identity still matches")
	return cmd
}

// check refuses the flags and arguments that do not go together.
func (o *adoptOptions) check(args []string) error {
	switch {
	case o.orphans && (len(args) > 0 || o.pgid != 0 || o.as != ""):
		return fmt.Errorf("--orphans takes no pid, --pgid or --as")
	case o.yes && !o.orphans:
		return fmt.Errorf("--yes goes with --orphans")
	case o.orphans:
		return nil
	case o.pgid != 0 && len(args) > 0:
		return fmt.Errorf("give a PID or --pgid N, not both")
	case o.pgid == 0 && len(args) != 1:
		return fmt.Errorf("adopt takes one PID, or --pgid N, or --orphans")
	}
	return nil
}

// runAdopt asks hermesd to adopt the group of the pid, or the group
// --pgid, and prints what it adopted; with --orphans it lists the
// leftovers of dead owners instead (writeOrphans), and adopts them with
// --yes.
func runAdopt(ctx context.Context, opts *adoptOptions) error {
	req := control.AdoptRequest{PGID: opts.pgid, As: opts.as}
	if opts.pid != "" {
		var err error
		if req.PID, err = strconv.Atoi(opts.pid); err != nil || req.PID <= 0 {
			return &exitError{code: exitcode.Usage, err: fmt.Errorf("adopt: %q is not a pid (a positive number)", opts.pid)}
		}
	}
	return withClient(opts.g, func(c *control.Client) error {
		if opts.orphans {
			rep, err := c.Orphans(ctx, control.OrphansRequest{Adopt: opts.yes})
			if err != nil {
				return fmt.Errorf("adopt --orphans: %w", err)
			}
			return show(opts.streams, rep, func(w io.Writer, rep control.OrphanReport) { writeOrphans(w, rep, opts.yes) })
		}
		a, err := c.Adopt(ctx, req)
		if err != nil {
			return fmt.Errorf("adopt: %w", err)
		}
		return show(opts.streams, a, func(w io.Writer, a control.Adopted) {
			fmt.Fprintf(w, "adopted %s: %s; it now dies with hermesd (stop it with `hermesctl stop %s`)\n", a.Unit, groupText(a), a.Unit)
		})
	})
}

// groupText describes an adopted group in one phrase.
func groupText(a control.Adopted) string {
	s := fmt.Sprintf("group %d, leader pid %d", a.PGID, a.PID)
	if a.Members > 1 {
		s += fmt.Sprintf(", %d processes", a.Members)
	}
	if a.Command != "" {
		s += " (" + a.Command + ")"
	}
	return s
}

// writeOrphans prints each leftover with its evidence, then what was (or
// would be) adopted.
func writeOrphans(w io.Writer, rep control.OrphanReport, adopted bool) {
	if len(rep.Orphans) == 0 {
		fmt.Fprintln(w, "no leftovers of dead owners in the ledger")
		return
	}
	n := 0
	for _, o := range rep.Orphans {
		cmd := o.Command
		if cmd == "" {
			cmd = "-"
		}
		fmt.Fprintf(w, "%s: pgid %d, pid %d, %s, started by %s pid %d: %s\n", o.Unit, o.PGID, o.PID, dash(o.Ownership), dash(o.OwnerRole), o.Owner, cmd)
		for _, e := range o.Evidence {
			fmt.Fprintf(w, "  - %s\n", e)
		}
		if o.Adoptable {
			n++
		} else {
			fmt.Fprintf(w, "  not adopted: %s\n", o.Why)
		}
	}
	fmt.Fprintln(w)
	if !adopted {
		fmt.Fprintf(w, "%d %s; %d can be adopted: run `hermesctl adopt --orphans --yes`\n",
			len(rep.Orphans), plural(len(rep.Orphans), "leftover", "leftovers"), n)
		return
	}
	if len(rep.Adopted) == 0 {
		fmt.Fprintln(w, "nothing adopted")
		return
	}
	names := make([]string, len(rep.Adopted))
	for i, a := range rep.Adopted {
		fmt.Fprintf(w, "adopted %s: %s\n", a.Unit, groupText(a))
		names[i] = a.Unit
	}
	fmt.Fprintf(w, "%d %s now %s with hermesd: %s\n", len(names), plural(len(names), "group", "groups"), plural(len(names), "dies", "die"), strings.Join(names, " "))
}
