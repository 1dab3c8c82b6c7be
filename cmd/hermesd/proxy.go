package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/internal/fdreserve"
	"github.com/hermes-units/hermes/providers"
	"github.com/hermes-units/hermes/proxy"
	"github.com/hermes-units/hermes/reconciler"
	"github.com/hermes-units/hermes/timeouts"
	"github.com/hermes-units/hermes/units"
)

// gatewayProxy is hermesd's provider proxy (SPEC §10): served on
// gateway.listen for hermesd's lifetime when, at startup, hermes.yaml's
// providers: or a unit's provider: block declares at least one provider;
// off otherwise. Whether it runs and where it listens are decided at
// startup; a reload rebuilds its provider set (proxy.SetProviders, which
// asks the providers for their model lists again), and a reload that adds
// the first provider or moves gateway.listen is logged as needing a
// restart of hermesd.
//
// A nil *gatewayProxy is the proxy off; its methods accept it.
type gatewayProxy struct {
	p      *proxy.Proxy
	ln     net.Listener
	listen string // as configured, to notice a change on reload
	set    atomic.Pointer[providers.Set]
	log    *slog.Logger
	state  string // the state directory, home of the token file
	// token is the proxy token in force, handed to jobs and proxy_env
	// units as OPENAI_API_KEY at their spawn; rotate replaces it.
	token atomic.Pointer[string]
	// rotateMu serialises rotations: file and proxy change together.
	rotateMu sync.Mutex
	// adhoc holds the release of each ad-hoc run registered, by id, for
	// EndRun; a release removes its own.
	adhoc sync.Map
}

// ErrProxyListen reports that the proxy cannot listen on gateway.listen.
var ErrProxyListen = errors.New("provider proxy cannot listen")

// startProxy reads hermes.yaml and the units directory once (into cache,
// where the reconciler's first load finds the files), and when they
// declare a provider builds the proxy and binds gateway.listen. It returns
// nil (off) when there is no provider. A config file or unit that does not
// load counts as declaring nothing: the reconciler reports it. A duplicate
// provider id is a configuration error (exitcode.Usage); an address in use or
// not on loopback is exitcode.HermesdProxy.
func startProxy(ctx context.Context, cfg config, cache *units.Cache, log *slog.Logger, obs *observer) (*gatewayProxy, error) {
	c, err := units.LoadConfig(cfg.Config)
	if err != nil {
		c = units.DefaultConfig()
	}
	l := &units.Loader{Defaults: &c.Defaults, Insecure: cfg.insecure, Unprivileged: os.Geteuid() != 0, Cache: cache}
	var specs []*units.Spec
	if d, err := l.LoadDir(cfg.Units); err == nil {
		specs = d.Specs()
	}
	set, err := providers.New(c, specs...)
	if err != nil {
		return nil, exit(exitcode.Usage, fmt.Errorf("providers: %w", err))
	}
	if len(set.IDs()) == 0 {
		return nil, nil // off; said nothing, so that a later startup error is hermesd's only line
	}
	token, err := proxy.LoadToken(cfg.State, true)
	if err != nil {
		return nil, exit(exitcode.HermesdProxy, err)
	}
	gw := c.Gateway
	p, err := proxy.New(proxy.Options{
		Providers:      set,
		Listen:         gw.Listen,
		Env:            os.LookupEnv,
		Logf:           func(f string, a ...any) { log.Warn(fmt.Sprintf(f, a...), "part", "proxy") },
		Token:          token,
		AllowedOrigins: gw.AllowedOrigins,
		Limits: proxy.Limits{
			MaxConns: gw.MaxConnections, MaxBody: int64(gw.MaxRequestBody), MaxInFlight: int64(gw.MaxBodiesInFlight),
			ReadHeaderTimeout: gw.ReadHeaderTimeout, BodyReadTimeout: gw.BodyReadTimeout, IdleTimeout: gw.IdleTimeout,
		},
		Report: obs.proxyCall,
	})
	if err != nil {
		return nil, exit(exitcode.Failure, err)
	}
	ln, err := p.Listen(ctx)
	if err != nil {
		return nil, exit(exitcode.HermesdProxy, fmt.Errorf("%w: %w; free the address, or set gateway.listen in %s to another loopback host:port",
			ErrProxyListen, err, orNone(c.File)))
	}
	g := &gatewayProxy{p: p, ln: ln, listen: c.Gateway.Listen, log: log, state: cfg.State}
	g.set.Store(set)
	g.token.Store(&token)
	lim := p.Limits()
	log.Info("provider proxy listening", "listen", ln.Addr().String(), "providers", set.IDs(),
		"token", proxy.TokenPath(cfg.State), "max_connections", lim.MaxConns)
	return g, nil
}

func orNone(file string) string {
	if file == "" {
		return "hermes.yaml"
	}
	return file
}

// serve runs the proxy until ctx ends (Proxy.Serve closes the listener).
// Connections that would take a descriptor of res are closed as accepted.
func (g *gatewayProxy) serve(ctx context.Context, res *fdreserve.Reserve) {
	if g == nil {
		return
	}
	if err := g.p.Serve(ctx, res.Listener(g.ln, "proxy", proxyLimits, func(f string, a ...any) { g.log.Warn(fmt.Sprintf(f, a...), "part", "proxy") })); err != nil {
		g.log.Error("provider proxy stopped", "err", err)
	}
}

// close releases the listener of a proxy that was never served.
func (g *gatewayProxy) close() {
	if g != nil {
		g.ln.Close()
	}
}

// currentToken is the proxy token for OPENAI_API_KEY, "" when off.
func (g *gatewayProxy) currentToken() string {
	if g == nil {
		return ""
	}
	return *g.token.Load()
}

// rotate replaces the proxy token (`hermesctl proxy rotate-token`): a new
// one in the token file, then in the proxy, which honours the old one for
// proxy.RotateGrace (in memory: a restart ends it). Units spawned later
// get the new one; running ones keep the old, which works until the grace
// ends. With the proxy off only the file changes (state is the state
// directory then).
func (g *gatewayProxy) rotate(state string) (control.TokenRotation, error) {
	tok := proxy.NewToken()
	if g == nil {
		if err := proxy.SaveToken(state, tok); err != nil {
			return control.TokenRotation{}, err
		}
		return control.TokenRotation{File: proxy.TokenPath(state)}, nil
	}
	g.rotateMu.Lock()
	defer g.rotateMu.Unlock()
	if err := proxy.SaveToken(g.state, tok); err != nil {
		return control.TokenRotation{}, err
	}
	g.p.SetToken(tok, proxy.RotateGrace)
	g.token.Store(&tok)
	until := time.Now().Add(proxy.RotateGrace)
	g.log.Info("proxy token replaced; the old one is honoured until the grace ends or hermesd restarts", "file", proxy.TokenPath(g.state), "old_valid_until", until.Format(time.RFC3339))
	return control.TokenRotation{File: proxy.TokenPath(g.state), OldValidUntil: until}, nil
}

// backend is the control API's Backend: the reconciler, and the proxy's
// token rotation.
type backend struct {
	*reconciler.Reconciler
	px    *gatewayProxy
	state string
}

func (b backend) RotateProxyToken(ctx context.Context) (control.TokenRotation, error) {
	return b.px.rotate(b.state)
}

var _ control.RunRegistrar = backend{}

// RegisterRun registers an ad-hoc run (`hermesctl run --run-budget`) with
// the proxy, as the reconciler registers a job's run: a fresh run id and
// a budget clock of its own, started now. release unregisters it and
// stops the clock. With the proxy off it is an error wrapping
// control.ErrConflict.
func (b backend) RegisterRun(ctx context.Context, req control.RunRequest) (control.RunRegistration, func(), error) {
	return b.px.registerRun(req)
}

// EndRun ends the ad-hoc run id as its release does: once it returns,
// the run's calls in flight are cut. A job's run is not ended here (its
// job ends it).
func (b backend) EndRun(ctx context.Context, id string) (bool, error) {
	if b.px == nil {
		return false, nil
	}
	release, ok := b.px.adhoc.Load(id)
	if ok {
		release.(func())()
	}
	return ok, nil
}

func (g *gatewayProxy) registerRun(req control.RunRequest) (control.RunRegistration, func(), error) {
	if g == nil {
		return control.RunRegistration{}, nil, fmt.Errorf("%w: the provider proxy is off: hermesd serves it when hermes.yaml (providers:) or a unit (provider:) declares a provider", control.ErrConflict)
	}
	id := "run-" + time.Now().UTC().Format("20060102T150405Z") + "-" + strings.ToLower(rand.Text()[:8])
	budget := timeouts.ResumeBudget(req.Budget, req.Spent, nil)
	g.p.RegisterRun(id, budget, req.WrapUp)
	g.log.Info("ad-hoc run registered with the proxy", "run", id, "budget", req.Budget)
	release := sync.OnceFunc(func() {
		g.adhoc.Delete(id)
		g.p.UnregisterRun(id)
		budget.Stop()
		g.log.Info("ad-hoc run ended", "run", id, "elapsed", budget.Elapsed().Round(time.Millisecond))
	})
	g.adhoc.Store(id, release)
	return control.RunRegistration{ID: id, BaseURL: proxy.RunBaseURL(g.url(), id), Deadline: budget.Deadline()}, release, nil
}

// url is the proxy's base URL for OPENAI_BASE_URL, "" when off.
func (g *gatewayProxy) url() string {
	if g == nil {
		return ""
	}
	return "http://" + g.ln.Addr().String()
}

// runs is the run registry for the reconciler's jobs; nil (no interface
// holding a nil pointer) when off.
func (g *gatewayProxy) runs() reconciler.Runs {
	if g == nil {
		return nil
	}
	return g.p
}

// statusFunc reports the proxy in `hermesctl status`; nil when off.
func (g *gatewayProxy) statusFunc() func() *control.Proxy {
	if g == nil {
		return nil
	}
	return func() *control.Proxy {
		lim, use := g.p.Limits(), g.p.Usage()
		st := &control.Proxy{
			Listen: g.ln.Addr().String(), Providers: g.set.Load().IDs(), Breakers: []control.Breaker{},
			Connections: use.Conns, Refused: use.Refused, BodyBytes: use.BodyBytes,
			Limits: control.ProxyLimits{
				MaxConnections: lim.MaxConns, MaxRequestBody: lim.MaxBody, MaxBodiesInFlight: lim.MaxInFlight,
				ReadHeaderTimeout: lim.ReadHeaderTimeout, BodyReadTimeout: lim.BodyReadTimeout, IdleTimeout: lim.IdleTimeout,
			},
		}
		for _, b := range g.p.Status() {
			st.Breakers = append(st.Breakers, control.Breaker{
				Session: b.Session, Provider: b.Provider, Model: b.Model,
				Streak: b.Streak, ProviderStreak: b.ProviderStreak, Threshold: b.Threshold, Tripped: b.Tripped, TrippedBy: b.TrippedBy,
			})
		}
		return st
	}
}

// loadHook is called by the loader after every load (Run's goroutine),
// with the config in force and the units read: it gives jobs without a
// run_budget_seconds the agent's, and rebuilds g's provider set. A set
// that does not build (a duplicate id) keeps the last good one. With the
// proxy off, a reload that declares a provider is logged once: serving it
// needs a restart of hermesd.
func loadHook(g *gatewayProxy, log *slog.Logger) func(units.Config, *reconciler.Loaded) {
	warned := false
	return func(c units.Config, l *reconciler.Loaded) {
		jobBudgets(c.Agent, l.Specs)
		set, err := providers.New(&c, l.Specs...)
		switch {
		case err != nil:
			log.Error("providers not rebuilt; the proxy keeps the last good set", "err", err)
		case g == nil:
			if len(set.IDs()) > 0 && !warned {
				warned = true
				log.Warn("providers are declared but the provider proxy is off: restart hermesd to serve it", "providers", set.IDs())
			}
		default:
			if c.Gateway.Listen != g.listen {
				log.Warn("gateway.listen changed; the proxy keeps serving on its address until hermesd restarts", "listen", g.ln.Addr().String(), "configured", c.Gateway.Listen)
			}
			g.set.Store(set)
			g.p.SetProviders(set)
		}
	}
}

// jobBudgets gives each job that sets no run_budget_seconds the agent's
// agent.run_budget_seconds (SPEC §10: "agent.run_budget_seconds, or a
// job's budget"): a job's own budget wins, and with neither a job runs
// unbounded. Applied at load, like the unit defaults of hermes.yaml, so a
// change of the agent budget restarts running jobs as a change of their
// own would. A job given the budget is replaced by a copy: the specs are
// shared with the loader's cache (reconciler.Loaded).
func jobBudgets(a units.Agent, specs []*units.Spec) {
	if a.RunBudget <= 0 {
		return
	}
	for i, s := range specs {
		if s.IsJob() && s.RunBudget == 0 {
			cp := *s
			cp.RunBudget = a.RunBudget
			specs[i] = &cp
		}
	}
}
