package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/proxy"
	"github.com/hermes-units/hermes/units"
	"github.com/spf13/cobra"
)

// proxyOptions are where proxy env and proxy rotate-token print; they
// take no flags.
type proxyOptions struct{ clientOptions }

// newProxyCmd is "hermesctl proxy": the provider proxy's credentials. The
// proxy serves only clients that present its token as their API key
// (proxy.LoadToken); these commands hand it to a shell and replace it.
func newProxyCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "proxy",
		Short: "The provider proxy's address and token for clients",
	}
	env := &proxyOptions{clientOptions{g: g}}
	c.AddCommand(env.command(&cobra.Command{
		Use:   "env",
		Short: `Print OPENAI_BASE_URL and OPENAI_API_KEY for a shell: eval "$(hermesctl proxy env)"`,
		Long: `Print OPENAI_BASE_URL and OPENAI_API_KEY for a shell: eval "$(hermesctl proxy env)".
With -o json, the two variables as one object: {"OPENAI_BASE_URL": ..., "OPENAI_API_KEY": ...}.`,
		Args: cobra.NoArgs,
	}, func(ctx context.Context, _ []string) error {
		return runProxyEnv(ctx, env)
	}))
	rotate := &proxyOptions{clientOptions{g: g}}
	c.AddCommand(rotate.command(&cobra.Command{
		Use:   "rotate-token",
		Short: "Replace the proxy token; the old one is honoured for 10 minutes, or until hermesd restarts",
		Args:  cobra.NoArgs,
	}, func(ctx context.Context, _ []string) error {
		return runRotateToken(ctx, rotate)
	}))
	return c
}

// runProxyEnv prints the proxy's base URL and token (proxyEnv) as a
// shell's exports, or as one JSON object.
func runProxyEnv(ctx context.Context, opts *proxyOptions) error {
	base, tok, err := proxyEnv(ctx, opts.g)
	if err != nil {
		return err
	}
	if opts.json {
		return writeJSON(opts.out, map[string]string{"OPENAI_BASE_URL": base, "OPENAI_API_KEY": tok})
	}
	fmt.Fprintf(opts.out, "export OPENAI_BASE_URL=%s\nexport OPENAI_API_KEY=%s\n", shellQuote(base), shellQuote(tok))
	return nil
}

// proxyEnv is the proxy's base URL and token: the address from the running
// hermesd's status (the configured gateway.listen when hermesd is not
// running), the token from the state directory.
func proxyEnv(ctx context.Context, g *globals) (base, token string, err error) {
	listen := ""
	if c, err := dial(g); err == nil {
		defer c.Close()
		st, err := c.Status(ctx)
		switch {
		case err == nil && st.Proxy == nil:
			return "", "", errors.New("the provider proxy is off: hermesd serves it when hermes.yaml (providers:) or a unit (provider:) declares a provider; declare one and restart hermesd")
		case err == nil:
			listen = st.Proxy.Listen
			g.useDaemonState(st.Daemon)
		case !errors.Is(err, control.ErrNotRunning):
			return "", "", err
		}
	}
	if listen == "" {
		c, err := units.LoadConfig(g.Config)
		if err != nil {
			return "", "", err
		}
		listen = c.Gateway.Listen
	}
	token, err = proxy.LoadToken(g.State, false)
	if err != nil {
		return "", "", err
	}
	return "http://" + listen + "/v1", token, nil
}

// runRotateToken asks the running hermesd for a new token; with hermesd
// not running it replaces the file itself (no old token is honoured then).
func runRotateToken(ctx context.Context, opts *proxyOptions) error {
	g, out, asJSON := opts.g, opts.out, opts.json
	c, err := dial(g)
	if err == nil {
		defer c.Close()
		rot, err := c.RotateProxyToken(ctx)
		if err == nil {
			switch {
			case asJSON:
				return writeJSON(out, rot)
			case rot.OldValidUntil.IsZero():
				fmt.Fprintf(out, "proxy token replaced in %s (the provider proxy is off)\n", rot.File)
			default:
				fmt.Fprintf(out, "proxy token replaced in %s; the old one is honoured until %s (%s), or until hermesd restarts\n",
					rot.File, rot.OldValidUntil.Local().Format(time.TimeOnly), proxy.RotateGrace)
			}
			fmt.Fprintln(out, `units started from now on get the new one; for a shell: eval "$(hermesctl proxy env)"`)
			return nil
		}
		if !errors.Is(err, control.ErrNotRunning) {
			return err
		}
	} else if !errors.Is(err, control.ErrNotRunning) {
		return err
	}
	if err := os.MkdirAll(g.State, 0o700); err != nil {
		return err
	}
	if err := proxy.SaveToken(g.State, proxy.NewToken()); err != nil {
		return err
	}
	if asJSON { // no grace: the old token is no longer valid
		return writeJSON(out, control.TokenRotation{File: proxy.TokenPath(g.State)})
	}
	fmt.Fprintf(out, "proxy token replaced in %s (hermesd is not running: the old one is no longer valid)\n", proxy.TokenPath(g.State))
	return nil
}

// childProxyEnv is the proxy's part of a `hermesctl run` child's
// environment: OPENAI_BASE_URL and OPENAI_API_KEY when hermesd serves the
// proxy and env sets no non-empty OPENAI_BASE_URL (a base URL already chosen is kept,
// with its key). Nothing when hermesd is not running or its proxy is off;
// a token that cannot be read is said on stderr.
func childProxyEnv(ctx context.Context, g *globals, env []string) []string {
	if ownBaseURL(env) {
		return nil
	}
	st, ok := proxyStatus(ctx, g)
	if !ok {
		return nil
	}
	return proxyChildEnv(g, env, "http://"+st.Listen+"/v1")
}

// proxyStatus is the provider proxy of the hermesd on g's socket; false
// when hermesd does not answer (within 2 s) or its proxy is off. g takes
// that hermesd's state directory, home of the token.
func proxyStatus(ctx context.Context, g *globals) (*control.Proxy, bool) {
	c, err := dial(g)
	if err != nil {
		return nil, false
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := c.Status(ctx)
	if err != nil || st.Proxy == nil {
		return nil, false
	}
	g.useDaemonState(st.Daemon)
	return st.Proxy, true
}

// proxyChildEnv is OPENAI_BASE_URL=base and OPENAI_API_KEY (the proxy
// token) for a run child, unless env sets a non-empty OPENAI_BASE_URL;
// a token that cannot be read is said on stderr.
func proxyChildEnv(g *globals, env []string, base string) []string {
	if ownBaseURL(env) {
		return nil
	}
	tok, err := proxy.LoadToken(g.State, false)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hermesctl run: OPENAI_BASE_URL and OPENAI_API_KEY not set: %v\n", err)
		return nil
	}
	return []string{"OPENAI_BASE_URL=" + base, "OPENAI_API_KEY=" + tok}
}

// ownBaseURL reports whether env sets a non-empty OPENAI_BASE_URL.
func ownBaseURL(env []string) bool {
	return slices.ContainsFunc(env, func(kv string) bool {
		v, ok := strings.CutPrefix(kv, "OPENAI_BASE_URL=")
		return ok && v != ""
	})
}

// shellQuote quotes s for a POSIX shell: in single quotes, each ' as '\”.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
