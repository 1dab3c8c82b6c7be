package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/hermes-units/hermes/units"
	"github.com/spf13/cobra"
)

// newCompletionCmd prints cobra's completion script for a shell. It
// replaces cobra's default completion command, so that the shells are
// exactly bash, zsh and fish, and an unknown shell is one clear error.
func newCompletionCmd() *cobra.Command {
	shells := []string{"bash", "zsh", "fish"}
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print the shell completion script",
		Long: `Print the completion script for a shell. For example:

  bash: source <(hermesctl completion bash)
  zsh:  hermesctl completion zsh > "${fpath[1]}/_hermesctl"
  fish: hermesctl completion fish > ~/.config/fish/completions/hermesctl.fish

Unit names complete from the units directory, offline.`,
		ValidArgs: shells,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("completion takes one shell: %s", strings.Join(shells, ", "))
			}
			if !slices.Contains(shells, args[0]) {
				return fmt.Errorf("completion: unknown shell %q; use one of %s", args[0], strings.Join(shells, ", "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			root, out := cmd.Root(), cmd.OutOrStdout()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(out, true)
			case "zsh":
				return root.GenZshCompletion(out)
			default:
				return root.GenFishCompletion(out, true)
			}
		},
	}
}

// completeUnits completes unit names from the units directory: the --units
// flag (or HERMES_UNITS) as typed on the command line being completed, else
// the running hermesd's, else units: of hermes.yaml or the default, read
// offline; names already given left out. Files that
// do not load still complete (a user may want to stop or fix them).
// Nothing completes once the command's Args would take no more.
// Use it as a command's ValidArgsFunction.
func completeUnits(g *globals) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if cmd.ValidateArgs(append(slices.Clone(args), toComplete)) != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp // the command takes no more units
		}
		// Completion runs no PersistentPreRunE: resolve the paths here,
		// and take the running hermesd's units directory unless --units
		// or HERMES_UNITS names one.
		if g.resolve(cmd) == nil {
			g.daemonPaths(cmd.Context())
		}
		dir := g.Units
		if _, err := os.Stat(dir); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		d, err := (&units.Loader{Insecure: true}).LoadDir(dir)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		add := func(name, desc string) {
			if strings.HasPrefix(name, toComplete) && !slices.Contains(args, name) {
				out = append(out, cobra.CompletionWithDesc(name, desc))
			}
		}
		for name, s := range d.Units {
			add(name, strings.Join(strings.Fields(s.Description), " "))
		}
		for name := range d.Failed {
			add(name, "does not load")
		}
		slices.Sort(out)
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
