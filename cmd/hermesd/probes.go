package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/internal/fdreserve"
	"github.com/hermes-units/hermes/internal/probe"
	"github.com/hermes-units/hermes/units"
)

// listenProbes binds probes.listen when hermes.yaml sets it (nil when
// not: the probes are off). Decided at start, like the proxy's and the
// metrics' addresses. An address that is not loopback without
// probes.remote is exitcode.Usage (the error says what to set); one that
// cannot be bound is exitcode.Failure.
func listenProbes(ctx context.Context, cfg config, log *slog.Logger) (net.Listener, error) {
	c, err := units.LoadConfig(cfg.Config)
	if err != nil || c.Probes.Listen == "" {
		return nil, nil // off; a config error is the reconciler's to report
	}
	if err := probe.CheckAddr(c.Probes.Listen, c.Probes.Remote); err != nil {
		return nil, exit(exitcode.Usage, fmt.Errorf("%w (in %s)", err, orNone(c.File)))
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", c.Probes.Listen)
	if err != nil {
		return nil, exit(exitcode.Failure, fmt.Errorf("probes cannot listen: %w; free the address, or set probes.listen in %s to another host:port", err, orNone(c.File)))
	}
	log.Info("probes listening", "listen", ln.Addr().String(), "remote", c.Probes.Remote)
	return ln, nil
}

// probesLimits: a kubelet probes one connection at a time, a few per
// period; like the metrics, the probes leave the control API its share.
var probesLimits = fdreserve.Limits{Keep: fdControlKeep, MaxConns: 8}

// serveProbes answers /livez and /readyz from the reconciler's status
// until ctx ends; nothing when the probes are off. Connections that would
// take a descriptor of res, or over probesLimits, are closed as accepted.
func (d *instance) serveProbes(ctx context.Context, res *fdreserve.Reserve) {
	if d.probes == nil {
		return
	}
	logf := func(f string, a ...any) { d.log.Warn(fmt.Sprintf(f, a...), "part", "probes") }
	if err := probe.Serve(ctx, res.Listener(d.probes, "probes", probesLimits, logf), probe.Handler(func(ctx context.Context) (control.Status, error) { return d.rec.Status(ctx) })); err != nil && !errors.Is(err, context.Canceled) {
		d.log.Error("probes stopped", "err", err)
	}
}
