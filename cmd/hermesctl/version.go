package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/version"
	"github.com/spf13/cobra"
)

// versionOptions are where version prints; it takes no flags.
type versionOptions struct{ clientOptions }

// newVersionCmd is `hermesctl version`; runVersion does the work.
func newVersionCmd(g *globals) *cobra.Command {
	opts := &versionOptions{clientOptions{g: g}}
	return opts.command(&cobra.Command{
		Use:   "version",
		Short: "Print the version of hermesctl and of the running hermesd",
		Args:  cobra.NoArgs,
	}, func(ctx context.Context, _ []string) error {
		return runVersion(ctx, opts)
	})
}

// versionReport is version's -o json output.
type versionReport struct {
	Client control.VersionInfo  `json:"client"`
	Daemon *control.VersionInfo `json:"daemon,omitempty"`
}

// runVersion prints this hermesctl's build, then the running hermesd's
// (asked over the control socket). With no hermesd it prints the
// client's, then fails saying why.
func runVersion(ctx context.Context, opts *versionOptions) error {
	client := version.Read()
	d, derr := daemonVersion(ctx, opts.g)
	if opts.json {
		v := versionReport{Client: control.VersionInfo(client)}
		if derr == nil {
			v.Daemon = &d
		}
		if err := writeJSON(opts.out, v); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(opts.out, "hermesctl", client)
		if derr == nil {
			fmt.Fprintln(opts.out, "hermesd  ", version.Info(d))
		}
	}
	if derr != nil {
		return fmt.Errorf("version of hermesd: %w", derr)
	}
	return nil
}

// daemonVersion asks the running hermesd for its build.
func daemonVersion(ctx context.Context, g *globals) (control.VersionInfo, error) {
	var v control.VersionInfo
	err := withClient(g, func(c *control.Client) error {
		var err error
		v, err = c.Version(ctx)
		if ce, ok := errors.AsType[*control.Error](err); ok && ce.Code == control.CodeNoRoute {
			return errors.New("hermesd does not report its version: it is older than this hermesctl")
		}
		return err
	})
	return v, err
}
