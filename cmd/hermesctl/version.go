package main

import (
	"errors"
	"fmt"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/version"
	"github.com/spf13/cobra"
)

// newVersionCmd is `hermesctl version`: this hermesctl's build, then the
// running hermesd's (asked over the control socket). With no hermesd it
// prints the client's and says so, exiting 1.
func newVersionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of hermesctl and of the running hermesd",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := g.jsonOutput()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			client := version.Read()
			d, derr := daemonVersion(cmd, g)
			if asJSON {
				v := struct {
					Client control.VersionInfo  `json:"client"`
					Daemon *control.VersionInfo `json:"daemon,omitempty"`
				}{Client: wireVersion(client)}
				if derr == nil {
					v.Daemon = &d
				}
				if err := writeJSON(out, v); err != nil {
					return err
				}
			} else {
				fmt.Fprintln(out, "hermesctl", client)
				if derr == nil {
					fmt.Fprintln(out, "hermesd  ", fromWire(d))
				}
			}
			if derr != nil {
				return fmt.Errorf("version of hermesd: %w", derr)
			}
			return nil
		},
	}
}

// daemonVersion asks the running hermesd for its build.
func daemonVersion(cmd *cobra.Command, g *globals) (control.VersionInfo, error) {
	c, err := dial(g)
	if err != nil {
		return control.VersionInfo{}, err
	}
	defer c.Close()
	v, err := c.Version(cmd.Context())
	var ce *control.Error
	if errors.As(err, &ce) && ce.Code == control.CodeNoRoute {
		return v, errors.New("hermesd does not report its version: it is older than this hermesctl")
	}
	return v, err
}

// versionString is --version's line.
func versionString() string { return version.Read().String() }

func wireVersion(v version.Info) control.VersionInfo {
	return control.VersionInfo{Version: v.Version, Revision: v.Revision, Time: v.Time, Modified: v.Modified, Go: v.Go}
}

func fromWire(v control.VersionInfo) version.Info {
	return version.Info{Version: v.Version, Revision: v.Revision, Time: v.Time, Modified: v.Modified, Go: v.Go}
}
