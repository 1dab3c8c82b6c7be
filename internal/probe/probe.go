// Package probe answers a cluster's liveness and readiness probes over
// HTTP: GET /livez and GET /readyz on the listener hermes.yaml's
// probes.listen names. Both read hermesd's status (control.Status, the
// reconciler's answer), so a probe is answered by the loop it asks about:
//
//   - /livez: 200 when the reconciler's loop answered within Timeout and
//     the death supervisor is not failing, stopped or unresponsive (its
//     health, which the owner keeps from the supervisor's replies); else
//     503. A liveness failure makes the kubelet restart the container.
//   - /readyz: 200 when, besides, every enabled unit is ready: running and
//     past its readiness probe, or a oneshot that is done; units stopped or
//     disabled by command, scheduled jobs, and adopted or released groups
//     do not count. Else 503, with the units that are not ready.
//
// The body is text: "ok", or one line per reason. An exec probe has the
// same answers from `hermesctl is-active`.
package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/units"
)

// Timeout bounds one probe's wait for status: a loop that does not answer
// within it is not live.
const Timeout = 2 * time.Second

// ErrNotLoopback: probes.listen is not a loopback address and
// probes.remote is not set.
var ErrNotLoopback = errors.New("probes listen address is not loopback")

// CheckAddr returns an error wrapping ErrNotLoopback when addr's host is
// not a loopback IP or "localhost" and remote is false.
func CheckAddr(addr string, remote bool) error {
	return units.CheckListen("probes.listen", addr, remote, ErrNotLoopback,
		"the kubelet probes the pod's IP: set probes.remote: true to serve it there, or give a loopback address")
}

// Live is the liveness verdict of a status read: nil, or why not.
func Live(st control.Status) error {
	switch h := st.Supervisor.Health; h.State {
	case control.HealthFailing, control.HealthStopped, control.HealthNotResponding:
		return fmt.Errorf("death supervisor %s", h)
	}
	return nil
}

// Ready is the readiness verdict of a status read: nil when every enabled
// unit is ready, else the units that are not, one line each.
func Ready(st control.Status) error {
	var not []string
	for _, u := range st.Units {
		if u.Disabled || u.Stopped || u.Job != nil || u.State == control.StateReleased || u.State == control.StateAdopted {
			continue
		}
		if u.State == control.StateDone || (u.State == control.StateRunning && u.Ready) {
			continue
		}
		line := fmt.Sprintf("unit %s: %s", u.Name, u.State)
		if u.State == control.StateRunning {
			line += " (not ready)"
		}
		if u.Error != "" {
			line += ": " + u.Error
		}
		not = append(not, line)
	}
	if len(not) > 0 {
		return errors.New(strings.Join(not, "\n"))
	}
	return nil
}

// Handler serves /livez and /readyz from status, each read bounded by
// Timeout.
func Handler(status func(context.Context) (control.Status, error)) http.Handler {
	read := func(r *http.Request) (control.Status, error) {
		ctx, cancel := context.WithTimeout(r.Context(), Timeout)
		defer cancel()
		st, err := status(ctx)
		if err != nil {
			return st, fmt.Errorf("hermesd's loop did not answer: %w", err)
		}
		return st, nil
	}
	answer := func(w http.ResponseWriter, err error) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, err)
			return
		}
		fmt.Fprintln(w, "ok")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, r *http.Request) {
		st, err := read(r)
		if err == nil {
			err = Live(st)
		}
		answer(w, err)
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		st, err := read(r)
		if err == nil {
			err = Live(st)
		}
		if err == nil {
			err = Ready(st)
		}
		answer(w, err)
	})
	return mux
}

// Serve serves h on ln until ctx ends, then closes it. A probe is small:
// headers and the connection's idle time are bounded so that a slow
// client holds nothing for long.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 30 * time.Second, MaxHeaderBytes: 8 << 10}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
		srv.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}
