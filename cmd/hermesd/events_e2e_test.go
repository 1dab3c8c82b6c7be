package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/events"
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/internal/metrics/metricstest"
)

// eventWords is an event without what varies between runs (time, pid,
// durations, texts of the OS): what the scenario asserts.
func eventWords(e events.Event) string {
	s := e.Kind.String()
	switch e.Kind {
	case events.UnitState:
		s += fmt.Sprintf(" %s %s→%s", e.Unit, e.From, e.State)
	case events.UnitReady, events.Adopted, events.Released:
		s += " " + e.Unit
	case events.UnitRestart:
		s += fmt.Sprintf(" %s #%d %s", e.Unit, e.Restarts, e.Cause)
	case events.Reload:
		s += " " + e.Outcome
		if p := e.Plan; p != nil {
			s += fmt.Sprintf(" start%v stop%v restart%v keep%v", p.Start, p.Stop, p.Restart, p.Keep)
		}
	case events.Cut:
		s += fmt.Sprintf(" %s/%s %s %s %s", e.Provider, e.Model, e.Session, e.Layer, e.Value)
	case events.BreakerTrip, events.BreakerReset:
		s += fmt.Sprintf(" %s/%s %s %d/%d", e.Provider, e.Model, e.Session, e.Streak, e.Threshold)
	}
	return s
}

// follow collects the daemon's events (history, then live) until the test
// ends.
type follow struct {
	t  *testing.T
	ch chan events.Event
}

func (d *hermesd) follow() *follow {
	f := &follow{t: d.t, ch: make(chan events.Event, 256)}
	c := d.client()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Events(ctx, control.EventOptions{Follow: true}, func(e events.Event) error {
			f.ch <- e
			return nil
		})
	}()
	d.t.Cleanup(func() { cancel(); <-done })
	return f
}

// expect reads events until it has len(want), and compares them in order.
func (f *follow) expect(step string, want ...string) []events.Event {
	f.t.Helper()
	var got []string
	var evs []events.Event
	deadline := time.After(reloadDeadline)
	for len(got) < len(want) {
		select {
		case e := <-f.ch:
			got = append(got, eventWords(e))
			evs = append(evs, e)
		case <-deadline:
			f.t.Fatalf("%s: after %v, events\ngot  %q\nwant %q", step, reloadDeadline, got, want)
		}
	}
	if !slices.Equal(got, want) {
		f.t.Errorf("%s: events\ngot  %q\nwant %q", step, got, want)
	}
	return evs
}

// silentUpstream is a provider that accepts every stream and sends only
// keep-alive comments: the proxy's stale detector cuts it.
func silentUpstream(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		tk := time.NewTicker(50 * time.Millisecond)
		defer tk.Stop()
		for {
			io.WriteString(w, ": ping\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-tk.C:
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// startScenario starts hermesd on a fresh directory: the proxy and the
// metrics on free loopback ports, provider local serving model m from a
// silent upstream (a stream's silence is cut after 1 s, and the breaker
// gives up at once), unit web restarting on failure, and the unit files
// of more, by name.
func startScenario(t *testing.T, more map[string]string) *hermesd {
	up := silentUpstream(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "hermes.yaml")
	writeFile(t, config, fmt.Sprintf("gateway: {listen: \"127.0.0.1:0\"}\nmetrics: {listen: \"127.0.0.1:0\"}\n"+
		"providers:\n  local:\n    base_url: %s/v1\n    models: {m: {}}\n", up.URL))
	writeFile(t, filepath.Join(dir, "units", "web.yaml"), unitYAML("")+"restart: on-failure\nrestart_sec: 50ms\n")
	for name, yaml := range more {
		writeFile(t, filepath.Join(dir, "units", name+".yaml"), yaml)
	}
	return startDaemonWith(t, dir, daemonOpts{config: config,
		env: []string{"HERMES_STREAM_STALE_TIMEOUT=1", "HERMES_STREAM_STALE_GIVEUP=1"}})
}

// TestEventsAndMetricsScenario runs hermesd through a scripted scenario (a
// unit killed and restarted, a reload, a stale cut that trips the breaker)
// and asserts the exact events, in order, on the stream `hermesctl events
// -f` reads, then the exact metric values of a scrape of metrics.listen.
func TestEventsAndMetricsScenario(t *testing.T) {
	needsProcesses(t, "hermesd and unit processes")
	d := startScenario(t, nil)
	dir := d.dir
	ev := d.follow()
	ev.expect("start", "unit.state web inactive→running", "unit.ready web")

	web := d.status()["web"]
	if err := syscall.Kill(web.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ev.expect("kill",
		"unit.state web running→stopping",
		"unit.restart web #1 signal",
		"unit.state web stopping→failed",
		"unit.state web failed→running",
		"unit.ready web")

	atomicSave(t, filepath.Join(dir, "units", "api.yaml"), unitYAML(""))
	ev.expect("reload",
		"reload applied start[api] stop[] restart[] keep[web]",
		"unit.state api inactive→running",
		"unit.ready api")

	st := d.fullStatus()
	streamCut(t, st)
	cut := ev.expect("cut", "proxy.cut local/m s1 stale_stream 1s", "proxy.breaker_trip local/m s1 1/1")
	if !strings.Contains(cut[0].Source, "HERMES_STREAM_STALE_TIMEOUT") {
		t.Errorf("the cut's source %q does not name HERMES_STREAM_STALE_TIMEOUT", cut[0].Source)
	}

	scrape, err := readMetrics(st.Daemon.Metrics)
	if err != nil {
		t.Fatal(err)
	}
	defer t.Run("promtool", func(t *testing.T) { metricstest.CheckPromtool(t, scrape) })
	fams := parseMetrics(t, scrape)
	fams.CheckValues(t, []metricstest.Series{
		{"hermes_unit_state", []string{"unit", "web", "state", "running"}, 1},
		{"hermes_unit_state", []string{"unit", "web", "state", "failed"}, 0},
		{"hermes_unit_state", []string{"unit", "api", "state", "running"}, 1},
		{"hermes_unit_ready", []string{"unit", "web"}, 1},
		{"hermes_unit_restarts_total", []string{"unit", "web", "cause", "signal"}, 1},
		{"hermes_unit_start_to_ready_seconds", []string{"unit", "web"}, 2},
		{"hermes_unit_start_to_ready_seconds", []string{"unit", "api"}, 1},
		{"hermes_reloads_total", []string{"outcome", "applied"}, 1},
		{"hermes_reloads_total", []string{"outcome", "failed"}, 0},
		{"hermes_reload_duration_seconds", nil, 1},
		{"hermes_config_errors", nil, 0},
		{"hermes_config_errors_total", nil, 0},
		{"hermes_supervisor_restarts_total", nil, 0},
		{"hermes_supervisor_healthy", nil, 1},
		{"hermes_proxy_requests_total", []string{"provider", "local", "model", "m", "outcome", "cut"}, 1},
		{"hermes_proxy_cuts_total", []string{"provider", "local", "layer", "stale_stream"}, 1},
		{"hermes_proxy_breaker_trips_total", []string{"provider", "local", "model", "m"}, 1},
		{"hermes_proxy_breakers", []string{"provider", "local", "model", "m", "state", "open"}, 1},
		{"hermes_proxy_breaker_streak_max", []string{"provider", "local", "model", "m"}, 1},
		{"hermes_proxy_stream_duration_seconds", []string{"provider", "local", "model", "m"}, 1},
		{"hermes_events_total", []string{"kind", "unit.state"}, 5},
		{"hermes_events_total", []string{"kind", "unit.ready"}, 3},
		{"hermes_events_total", []string{"kind", "unit.restart"}, 1},
		{"hermes_events_total", []string{"kind", "reload"}, 1},
		{"hermes_events_total", []string{"kind", "proxy.cut"}, 1},
		{"hermes_events_total", []string{"kind", "proxy.breaker_trip"}, 1},
		{"hermes_event_subscribers", nil, 1},
		{"hermes_status_up", nil, 1},
	})
	if got := fams.Value("hermes_ledger_write_duration_seconds"); got < 1 {
		t.Errorf("hermes_ledger_write_duration_seconds: %v writes, want at least the spawns'", got)
	}
	if t.Failed() {
		b, _ := os.ReadFile(filepath.Join(dir, "hermesd.log"))
		t.Logf("hermesd log:\n%s", b)
	}
}

// TestMetricsRefusals: metrics.listen off loopback, or a token file others
// can read, stop hermesd at startup with exit 6 and a message saying what
// to change.
func TestMetricsRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, metrics, want string
		tokenMode           os.FileMode
	}{
		{"not loopback", `{listen: "0.0.0.0:9464"}`, `hermesd: metrics cannot listen: metrics listen address is not loopback: "0.0.0.0:9464"; metrics listen on loopback unless metrics.remote is true`, 0},
		{"token readable by others", `{listen: "127.0.0.1:0", token_file: tok}`, `hermesd: metrics cannot listen: metrics bearer token unusable: metrics.token_file `, 0o644},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			config := filepath.Join(dir, "hermes.yaml")
			writeFile(t, config, "metrics: "+tc.metrics+"\n")
			if tc.tokenMode != 0 {
				writeFile(t, filepath.Join(dir, "tok"), "secret\n")
				os.Chmod(filepath.Join(dir, "tok"), tc.tokenMode)
			}
			out := refusedStart(t, dir, config, exitcode.HermesdMetrics)
			if !strings.Contains(out, tc.want) {
				t.Errorf("hermesd said\n%s\nwant it to contain %q", out, tc.want)
			}
		})
	}
}
