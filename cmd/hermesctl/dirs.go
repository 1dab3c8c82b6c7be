package main

import (
	"context"
	"errors"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/paths"
	"github.com/spf13/cobra"
)

// askPathsTimeout bounds the question to hermesd in daemonPaths: the
// commands that ask work offline too, and a hermesd that hangs must not
// hang them.
const askPathsTimeout = 2 * time.Second

// daemonPaths makes the commands that read the state or the units directory
// (who, logs, validate, completion, the proxy token) read those of the
// hermesd behind g.Socket, as it reports them (GET /v1/paths), so that the
// socket alone (HERMES_SOCKET) makes every command agree with the daemon. A
// path the user gave (flag or HERMES_* variable) is kept: it is what they
// asked for. It reports whether a hermesd answered; when none does (not
// running, an older one, no answer in time) g keeps the paths resolved
// from flags, env, hermes.yaml and the defaults.
func (g *globals) daemonPaths(ctx context.Context) bool {
	c, err := control.Dial(g.Socket) // not dial: this question has its own bound, and no answer is an answer
	if err != nil {
		return false
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, askPathsTimeout)
	defer cancel()
	p, err := c.Paths(ctx)
	if err != nil {
		return false
	}
	take := func(dst *string, src string, from paths.Source) {
		if src != "" && !from.Given() {
			*dst = src
		}
	}
	take(&g.Config, p.Config, g.from.Config)
	take(&g.Units, p.Units, g.from.Units)
	take(&g.State, p.State, g.from.State)
	return true
}

// useDaemonState takes the state directory of the hermesd whose status
// says d, as daemonPaths does, for the commands that have its status at
// hand already.
func (g *globals) useDaemonState(d control.Daemon) {
	if d.State != "" && !g.from.State.Given() {
		g.State = d.State
	}
}

// resolve sets g's paths from cmd's flags, HERMES_* variables, hermes.yaml
// and the defaults (paths.Resolve, as hermesd does). With no socket given,
// it takes the default place where a socket is (paths.FindSocket): a
// hermesd started in another environment (with or without XDG_RUNTIME_DIR)
// is found. A config file that does not parse leaves the other layers in
// force: the commands that read it report its errors.
func (g *globals) resolve(cmd *cobra.Command) error {
	r, err := paths.Resolve(cmd.Flags())
	if err != nil && !errors.Is(err, paths.ErrConfig) {
		return err
	}
	g.Paths, g.from = r.Paths, r.From
	if g.from.Socket == paths.FromDefault {
		g.Socket = paths.FindSocket(g.Socket)
	}
	return nil
}
