package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/events"
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/internal/fdreserve"
	"github.com/hermes-units/hermes/internal/metrics"
	"github.com/hermes-units/hermes/proxy"
	"github.com/hermes-units/hermes/timeouts"
	"github.com/hermes-units/hermes/units"
)

// observer is what hermesd tells about itself: the event stream (a bounded
// history and its followers, served on the control socket) and the
// Prometheus metrics counted from it, served on metrics.listen when
// hermes.yaml sets it. Whether and where metrics are served is decided at
// startup, like the proxy's address.
type observer struct {
	bus     *events.Bus
	metrics *metrics.Metrics
	ln      net.Listener // nil: metrics off
	token   string
	remote  bool // metrics.remote: any Host is served
	log     *slog.Logger
}

// ErrMetricsListen reports that metrics cannot be served on metrics.listen.
var ErrMetricsListen = errors.New("metrics cannot listen")

// startObserver builds the bus and the metrics, and binds metrics.listen
// when set. status is read at each scrape (the reconciler's, once it runs).
// A metrics.listen that is not loopback, in use, or a token file that
// cannot be used is exitcode.HermesdMetrics.
func startObserver(ctx context.Context, cfg config, log *slog.Logger, status func(context.Context) (control.Status, error)) (*observer, error) {
	o := &observer{log: log}
	o.bus = events.New(events.Options{Observe: func(e events.Event) { o.metrics.Observe(e) }})
	o.metrics = metrics.New(metrics.Options{Status: status, Bus: o.bus, Process: true})
	c, err := units.LoadConfig(cfg.Config)
	if err != nil || c.Metrics.Listen == "" {
		return o, nil // off; a config error is the reconciler's to report
	}
	if c.Metrics.TokenFile != "" {
		if o.token, err = metrics.ReadToken(c.Metrics.TokenFile); err != nil {
			return nil, exit(exitcode.HermesdMetrics, fmt.Errorf("%w: %w", ErrMetricsListen, err))
		}
	}
	o.remote = c.Metrics.Remote
	if o.ln, err = metrics.Listen(ctx, c.Metrics.Listen, c.Metrics.Remote); err != nil {
		if errors.Is(err, metrics.ErrNotLoopback) { // the error says what to set
			return nil, exit(exitcode.HermesdMetrics, fmt.Errorf("%w: %w (in %s)", ErrMetricsListen, err, orNone(c.File)))
		}
		return nil, exit(exitcode.HermesdMetrics, fmt.Errorf("%w: %w; free the address, or set metrics.listen in %s to another loopback host:port",
			ErrMetricsListen, err, orNone(c.File)))
	}
	log.Info("metrics listening", "listen", o.ln.Addr().String(), "token", o.token != "", "remote", o.remote)
	return o, nil
}

// publish is the reconciler's and the supervisor's way in.
func (o *observer) publish(e events.Event) { o.bus.Publish(e) }

// supervisorRestart is supervisor.Options.OnRestart.
func (o *observer) supervisorRestart(pid int, why string) {
	o.bus.Publish(events.Event{Kind: events.SupervisorRestart, PID: pid, Reason: why})
}

// serve serves the metrics until ctx ends; nothing when off. Connections
// that would take a descriptor of res are closed as accepted.
func (o *observer) serve(ctx context.Context, res *fdreserve.Reserve) {
	if o.ln == nil {
		return
	}
	logf := func(f string, a ...any) { o.log.Warn(fmt.Sprintf(f, a...), "part", "metrics") }
	if err := metrics.Serve(ctx, res.Listener(o.ln, "metrics", metricsLimits, logf), o.metrics.Handler(o.token, o.remote), logf); err != nil {
		o.log.Error("metrics stopped", "err", err)
	}
}

// addr is where metrics are served, "" when off.
func (o *observer) addr() string {
	if o.ln == nil {
		return ""
	}
	return o.ln.Addr().String()
}

// close releases a listener that was never served.
func (o *observer) close() {
	if o.ln != nil {
		o.ln.Close()
	}
}

// proxyCall is proxy.Options.Report: every call is counted; a cut, and a
// breaker that opened or closed, are published.
func (o *observer) proxyCall(r proxy.Report) {
	c := metrics.Call{Provider: r.Provider, Model: r.Model, Stream: r.Stream, TTFT: r.TTFT, Duration: r.Duration}
	switch {
	case r.GaveUp:
		c.Outcome = metrics.OutcomeGaveUp
	case r.Cut != nil:
		c.Outcome = metrics.OutcomeCut
	case r.Outcome == timeouts.Completed:
		c.Outcome = metrics.OutcomeCompleted
	default:
		c.Outcome = metrics.OutcomeFailed
	}
	o.metrics.Call(c)
	if ce := r.Cut; ce != nil {
		o.bus.Publish(events.Event{Kind: events.Cut, Provider: r.Provider, Model: r.Model, Session: r.Session,
			Layer: ce.Layer.String(), Value: ce.Value.Timeout, Source: ce.Value.ChainString(), Setting: ce.Setting})
	}
	if r.Changed {
		k := events.BreakerReset
		if r.Tripped {
			k = events.BreakerTrip
		}
		o.bus.Publish(events.Event{Kind: k, Provider: r.Provider, Model: r.Model, Session: r.Session, Streak: r.Streak, Threshold: r.Threshold})
	}
}
