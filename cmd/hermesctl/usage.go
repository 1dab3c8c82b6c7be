package main

import (
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/spf13/cobra"
)

// Usage errors exit 2 (exitcode.Usage) whichever command they are made
// on: a flag that does not parse or is unknown, an argument count a
// command's Args refuses, a required flag missing, an unknown command.
// cobra returns them all as plain errors, from four places; usageErrors
// marks each of them, once, on the whole tree, and execute the one
// cobra returns before any command is found. TestUsageExits walks the tree,
// so that a command added later is covered without a line more.

// usageError marks err as a usage error: exit 2, its message printed once.
func usageError(err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: exitcode.Usage, err: err}
}

// usageErrors makes the usage errors cobra finds on root and every command
// below it exit 2: those of flag parsing (the flag error function, which
// every command inherits from root), of each command's Args, and of its
// required flags and flag groups (checked by a PreRunE, before cobra's own
// check would return them unmarked). Call it once the tree is built.
func usageErrors(root *cobra.Command) {
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if args := c.Args; args != nil {
			c.Args = func(cmd *cobra.Command, a []string) error { return usageError(args(cmd, a)) }
		}
		if c.Runnable() {
			pre := c.PreRunE
			c.PreRunE = func(cmd *cobra.Command, a []string) error {
				if err := cmd.ValidateRequiredFlags(); err != nil {
					return usageError(err)
				}
				if err := cmd.ValidateFlagGroups(); err != nil {
					return usageError(err)
				}
				if pre != nil {
					return pre(cmd, a)
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// execute runs root as main does. An error of a command that runs nothing
// (root, a group such as export) is a usage error: flags are marked
// already (usageErrors), and what is left is cobra's "unknown command",
// which it finds before any Args of ours is called.
func execute(root *cobra.Command) error {
	cmd, err := root.ExecuteC()
	if err != nil && cmd != nil && !cmd.Runnable() {
		if _, marked := err.(*exitError); !marked {
			return usageError(err)
		}
	}
	return err
}
