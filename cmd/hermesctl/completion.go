package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/hermes-units/hermes/units"
	"github.com/spf13/cobra"
)

// completionOptions are the shell of completion, the command tree it
// completes, and where it prints.
type completionOptions struct {
	clientOptions
	shell string         // bash, zsh or fish
	root  *cobra.Command // hermesctl's root command
}

// shells are the shells completion writes a script for.
var shells = []string{"bash", "zsh", "fish"}

// newCompletionCmd prints cobra's completion script for a shell, for the
// command tree of root. It replaces cobra's default completion command,
// so that the shells are exactly bash, zsh and fish, and an unknown shell
// is one clear error.
func newCompletionCmd(g *globals, root *cobra.Command) *cobra.Command {
	opts := &completionOptions{clientOptions: clientOptions{g: g}, root: root}
	return opts.command(&cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print the shell completion script",
		Long: `Print the completion script for a shell. For example:

  bash: source <(hermesctl completion bash)
        or, for every shell: hermesctl completion bash > ~/.local/share/bash-completion/completions/hermesctl
  zsh:  hermesctl completion zsh > "${fpath[1]}/_hermesctl"
  fish: hermesctl completion fish > ~/.config/fish/completions/hermesctl.fish

The bash script needs the bash-completion package (Debian and Ubuntu:
apt-get install bash-completion; macOS: brew install bash-completion@2),
loaded by your ~/.bashrc: without it every TAB prints
"_get_comp_words_by_ref: command not found". zsh and fish need nothing more.

Unit names complete from the units directory, offline.`,
		ValidArgs: shells,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("completion takes one shell: %s", strings.Join(shells, ", "))
			}
			if !slices.Contains(shells, args[0]) {
				return unknownShell(args[0])
			}
			return nil
		},
	}, func(_ context.Context, args []string) error {
		opts.shell = args[0]
		return runCompletion(opts)
	})
}

// runCompletion prints the completion script of opts.root for opts.shell.
func runCompletion(opts *completionOptions) error {
	switch opts.shell {
	case "bash":
		return opts.root.GenBashCompletionV2(opts.out, true)
	case "zsh":
		return opts.root.GenZshCompletion(opts.out)
	case "fish":
		return opts.root.GenFishCompletion(opts.out, true)
	}
	return unknownShell(opts.shell)
}

func unknownShell(shell string) error {
	return fmt.Errorf("completion: unknown shell %q; use one of %s", shell, strings.Join(shells, ", "))
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
