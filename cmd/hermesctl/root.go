package main

import (
	"fmt"

	"github.com/hermes-units/hermes/internal/boolflag"
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/internal/paths"
	"github.com/hermes-units/hermes/internal/version"
	"github.com/spf13/cobra"
)

// globals are the flags every command shares with hermesd: the same paths,
// with the same precedence (flag > HERMES_* env > default).
type globals struct {
	paths.Paths
	from   paths.Sources // where each path came from
	output string        // "" (human) or "json"
}

// exitError carries a specific exit status out of a command. main prints
// its message once; one with no message (err nil) is printed not at all:
// the command has said what it had to (run's child, status's table).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func newRoot() *cobra.Command {
	g := &globals{Paths: paths.Defaults()}
	root := &cobra.Command{
		Use:           "hermesctl",
		Short:         "Steer hermesd, and run commands as owned children",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Read().String(),
	}
	root.SetVersionTemplate("hermesctl {{.Version}}\n")
	root.InitDefaultVersionFlag() // now: the man pages (TestManPages) list it
	f := root.PersistentFlags()
	paths.AddFlags(f)
	// Paths are layered exactly as hermesd layers them (flag > HERMES_* env >
	// hermes.yaml > default). A config file that does not parse leaves the
	// other layers in force: the commands that read it report its errors.
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if err := checkOutput(cmd, g.output); err != nil {
			return &exitError{code: exitcode.Usage, err: err}
		}
		if err := g.resolve(cmd); err != nil {
			return &exitError{code: exitcode.Usage, err: err}
		}
		return nil
	}
	f.StringVarP(&g.output, "output", "o", "", "output format: json (default: text for humans)")
	root.AddCommand(newRunCmd(g))
	root.AddCommand(newProxyCmd(g))
	root.AddCommand(newValidateCmd(g))
	root.AddCommand(newStatusCmd(g))
	root.AddCommand(newIsActiveCmd(g))
	root.AddCommand(newIsFailedCmd(g))
	root.AddCommand(newStartCmd(g))
	root.AddCommand(newStopCmd(g))
	root.AddCommand(newRestartCmd(g))
	root.AddCommand(newEnableCmd(g))
	root.AddCommand(newDisableCmd(g))
	root.AddCommand(newIsEnabledCmd(g))
	root.AddCommand(newMaskCmd(g))
	root.AddCommand(newUnmaskCmd(g))
	root.AddCommand(newReloadCmd(g))
	root.AddCommand(newKillCmd(g))
	root.AddCommand(newEditCmd(g))
	root.AddCommand(newResetFailedCmd(g))
	root.AddCommand(newLogsCmd(g))
	root.AddCommand(newCatCmd(g))
	root.AddCommand(newShowCmd(g))
	root.AddCommand(newListUnitFilesCmd(g))
	root.AddCommand(newTimeoutsCmd(g))
	root.AddCommand(newAdoptCmd(g))
	root.AddCommand(newReleaseCmd(g))
	root.AddCommand(newWhoCmd(g))
	root.AddCommand(newExportCmd(g))
	root.AddCommand(newImportCmd(g))
	root.AddCommand(newEventsCmd(g))
	root.AddCommand(newTopCmd(g))
	root.AddCommand(newVersionCmd(g))
	root.AddCommand(newCompletionCmd(g, root))
	plainHelp(root)
	usageErrors(root)
	return root
}

// plainHelp makes the help and the usage of root and of every command
// below it show each boolean flag as "-h, --help", without pflag's
// "[=true|false]" (internal/boolflag): their flags, -h/--help and
// --version included, are made plain as they are shown. Not before: a
// walk of the whole tree, whose help flags it creates, cost every run of
// hermesctl three quarters of building the tree.
func plainHelp(root *cobra.Command) {
	help, usage := root.HelpFunc(), root.UsageFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		plainBools(c)
		help(c, args)
	})
	root.SetUsageFunc(func(c *cobra.Command) error {
		plainBools(c)
		return usage(c)
	})
}

// plainBools makes every boolean flag of c, its own and those it
// inherits, -h/--help and --version included, plain (boolflag.Plain).
func plainBools(c *cobra.Command) {
	c.InitDefaultHelpFlag()
	c.InitDefaultVersionFlag()
	boolflag.Plain(c.PersistentFlags())
	boolflag.Plain(c.Flags())
	boolflag.Plain(c.InheritedFlags())
}
