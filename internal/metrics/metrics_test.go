package metrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/events"
	"github.com/hermes-units/hermes/internal/metrics/metricstest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func scrapeBytes(t *testing.T, h http.Handler) []byte {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9464/metrics", nil))
	return rec.Body.Bytes()
}

// Scrape GETs /metrics from h and parses it as Prometheus does.
func Scrape(t *testing.T, h http.Handler) metricstest.Families {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9464/metrics", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	fams, err := metricstest.Parse(rec.Body)
	if err != nil {
		t.Fatalf("scrape does not parse: %v", err)
	}
	return fams
}

func TestMetricsFromEvents(t *testing.T) {
	st := control.Status{
		Supervisor: control.Supervisor{Mode: "pgroup", Health: control.Health{State: control.HealthOK}, Groups: 2},
		Units: []control.Unit{
			{Name: "web", State: "running", Ready: true, RSS: 4096},
			{Name: "db", State: "failed"},
		},
		ConfigErrors: []control.ConfigError{{File: "x.yaml", Message: "bad"}},
		Proxy: &control.Proxy{Breakers: []control.Breaker{
			{Session: "a", Provider: "local", Model: "m", Streak: 3, Threshold: 3, Tripped: true},
			{Session: "b", Provider: "local", Model: "m", Streak: 1, Threshold: 3},
		}},
	}
	var m *Metrics
	bus := events.New(events.Options{Observe: func(e events.Event) { m.Observe(e) }})
	m = New(Options{Bus: bus, Status: func(context.Context) (control.Status, error) { return st, nil }})
	for _, e := range []events.Event{
		{Kind: events.UnitRestart, Unit: "db", Cause: events.CauseSignal},
		{Kind: events.UnitRestart, Unit: "db", Cause: events.CauseSignal},
		{Kind: events.UnitRestart, Unit: "db", Cause: events.CauseExit},
		{Kind: events.UnitReady, Unit: "web", Duration: 300 * time.Millisecond},
		{Kind: events.Reload, Outcome: "applied", Duration: 3 * time.Millisecond},
		{Kind: events.Reload, Outcome: "failed", Duration: time.Millisecond},
		{Kind: events.ConfigError},
		{Kind: events.SupervisorRestart},
		{Kind: events.Cut, Provider: "local", Model: "m", Layer: "stale_stream"},
		{Kind: events.BreakerTrip, Provider: "local", Model: "m"},
	} {
		bus.Publish(e)
	}
	m.Call(Call{Provider: "local", Model: "m", Outcome: OutcomeCompleted, Stream: true, TTFT: time.Second, Duration: 2 * time.Second})
	m.Call(Call{Provider: "local", Model: "m", Outcome: OutcomeCut, Stream: true, Duration: 2 * time.Second})
	m.Call(Call{Provider: "local", Model: "m", Outcome: OutcomeGaveUp, Stream: true})
	m.LedgerWrite(2 * time.Millisecond)
	_, sub := bus.Subscribe()
	defer sub.Close()

	fams := Scrape(t, m.Handler("", false))
	defer t.Run("promtool", func(t *testing.T) { metricstest.CheckPromtool(t, scrapeBytes(t, m.Handler("", false))) })
	fams.CheckValues(t, []metricstest.Series{
		{"hermes_unit_restarts_total", []string{"unit", "db", "cause", "signal"}, 2},
		{"hermes_unit_restarts_total", []string{"unit", "db", "cause", "exit"}, 1},
		{"hermes_unit_start_to_ready_seconds", []string{"unit", "web"}, 1},
		{"hermes_reloads_total", []string{"outcome", "applied"}, 1},
		{"hermes_reloads_total", []string{"outcome", "failed"}, 1},
		{"hermes_reload_duration_seconds", nil, 2},
		{"hermes_config_errors_total", nil, 1},
		{"hermes_config_errors", nil, 1},
		{"hermes_supervisor_restarts_total", nil, 1},
		{"hermes_supervisor_mode", []string{"mode", "pgroup"}, 1},
		{"hermes_supervisor_mode", []string{"mode", "cgroup"}, 0},
		{"hermes_supervisor_healthy", nil, 1},
		{"hermes_supervisor_groups", nil, 2},
		{"hermes_ledger_write_duration_seconds", nil, 1},
		{"hermes_unit_state", []string{"unit", "web", "state", "running"}, 1},
		{"hermes_unit_state", []string{"unit", "web", "state", "failed"}, 0},
		{"hermes_unit_state", []string{"unit", "db", "state", "failed"}, 1},
		{"hermes_unit_ready", []string{"unit", "web"}, 1},
		{"hermes_unit_resident_memory_bytes", []string{"unit", "web"}, 4096},
		{"hermes_proxy_requests_total", []string{"provider", "local", "model", "m", "outcome", "completed"}, 1},
		{"hermes_proxy_requests_total", []string{"provider", "local", "model", "m", "outcome", "cut"}, 1},
		{"hermes_proxy_requests_total", []string{"provider", "local", "model", "m", "outcome", "gave_up"}, 1},
		{"hermes_proxy_cuts_total", []string{"provider", "local", "layer", "stale_stream"}, 1},
		{"hermes_proxy_breaker_trips_total", []string{"provider", "local", "model", "m"}, 1},
		{"hermes_proxy_breakers", []string{"provider", "local", "model", "m", "state", "open"}, 1},
		{"hermes_proxy_breakers", []string{"provider", "local", "model", "m", "state", "closed"}, 1},
		{"hermes_proxy_breaker_streak_max", []string{"provider", "local", "model", "m"}, 3},
		{"hermes_proxy_time_to_first_token_seconds", []string{"provider", "local", "model", "m"}, 1},
		{"hermes_proxy_stream_duration_seconds", []string{"provider", "local", "model", "m"}, 2},
		{"hermes_events_total", []string{"kind", "unit.restart"}, 3},
		{"hermes_events_total", []string{"kind", "proxy.cut"}, 1},
		{"hermes_event_subscribers", nil, 1},
		{"hermes_event_subscribers_dropped_total", nil, 0},
		{"hermes_status_up", nil, 1},
	})
	for name := range fams {
		if !strings.HasPrefix(name, "hermes_") {
			t.Errorf("metric %s has no hermes_ prefix", name)
		}
	}
}

// TestTwoMetricsDoNotShare: each Metrics has its own registry.
func TestTwoMetricsDoNotShare(t *testing.T) {
	a, b := New(Options{}), New(Options{})
	a.Observe(events.Event{Kind: events.ConfigError})
	if got := Scrape(t, b.Handler("", false)).Value("hermes_config_errors_total"); got != 0 {
		t.Errorf("b counted a's config error: got %v, want 0", got)
	}
}

func TestHandlerRefusals(t *testing.T) {
	h := New(Options{}).Handler("s3cret", false)
	for _, tc := range []struct {
		name, host, path, auth string
		want                   int
	}{
		{"ok", "127.0.0.1:9464", "/metrics", "Bearer s3cret", 200},
		{"localhost", "localhost:9464", "/metrics", "Bearer s3cret", 200},
		{"ipv6", "[::1]:9464", "/metrics", "Bearer s3cret", 200},
		{"rebound name", "evil.example:9464", "/metrics", "Bearer s3cret", http.StatusMisdirectedRequest},
		{"lan address", "192.168.1.2:9464", "/metrics", "Bearer s3cret", http.StatusMisdirectedRequest},
		{"no token", "127.0.0.1:9464", "/metrics", "", http.StatusUnauthorized},
		{"wrong token", "127.0.0.1:9464", "/metrics", "Bearer s3cre", http.StatusUnauthorized},
		{"basic", "127.0.0.1:9464", "/metrics", "Basic s3cret", http.StatusUnauthorized},
		{"other path", "127.0.0.1:9464", "/debug", "Bearer s3cret", http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := get(h, tc.host, tc.path, tc.auth)
			if rec.Code != tc.want {
				t.Errorf("got %d, want %d (%s)", rec.Code, tc.want, rec.Body)
			}
		})
	}
}

func TestListenLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:9464", "example.com:9464"} {
		if _, err := Listen(t.Context(), addr, false); err == nil {
			t.Errorf("Listen(%q) succeeded, want ErrNotLoopback", addr)
		}
	}
	ln, err := Listen(t.Context(), "127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
}

func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, path, want, err string
	}{
		{"ok", write("ok", "tok\n", 0o600), "tok", ""},
		{"open to others", write("wide", "tok\n", 0o644), "", "readable by others"},
		{"empty", write("empty", "\n", 0o600), "", "one non-empty line"},
		{"two lines", write("two", "a\nb\n", 0o600), "", "one non-empty line"},
		{"missing", filepath.Join(dir, "none"), "", "no such file"},
		{"directory", dir, "", "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadToken(tc.path)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %q, %v; want an error containing %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestSeriesFromFirstAppearance: a unit that never restarted has
// hermes_unit_restarts_total at 0 for every cause from its first scrape
// (increase() then sees its first restart), its start-to-ready histogram,
// and its main process's start time; hermes_build_info is 1.
func TestSeriesFromFirstAppearance(t *testing.T) {
	st := control.Status{Units: []control.Unit{{Name: "web", State: "running", Uptime: 90 * time.Second}}}
	m := New(Options{Status: func(context.Context) (control.Status, error) { return st, nil }})
	before := time.Now()
	fams := Scrape(t, m.Handler("", false))
	for _, cause := range causes {
		if got := fams.Value("hermes_unit_restarts_total", "unit", "web", "cause", cause); got != 0 {
			t.Errorf("hermes_unit_restarts_total{unit=web,cause=%s} = %v, want 0 (-1: no series)", cause, got)
		}
	}
	if got := fams.Value("hermes_unit_start_to_ready_seconds", "unit", "web"); got != 0 {
		t.Errorf("hermes_unit_start_to_ready_seconds{unit=web} count = %v, want 0 (-1: no series)", got)
	}
	start := fams.Value("hermes_unit_start_time_seconds", "unit", "web")
	if want := float64(before.Add(-90 * time.Second).Unix()); start < want-2 || start > want+2 {
		t.Errorf("hermes_unit_start_time_seconds{unit=web} = %v, want about %v", start, want)
	}
	fam := fams["hermes_build_info"]
	if fam == nil || len(fam.Metric) != 1 || fam.Metric[0].GetGauge().GetValue() != 1 {
		t.Errorf("hermes_build_info: %v, want one series at 1", fam)
	}
	metricstest.CheckPromtool(t, scrapeBytes(t, m.Handler("", false)))
}

// metrics.remote: a scraper elsewhere (a cluster's Prometheus, at the
// pod's address) is served, its token still checked; an address that is
// not loopback binds.
func TestRemote(t *testing.T) {
	h := New(Options{}).Handler("s3cret", true)
	for _, tc := range []struct {
		host, auth string
		want       int
	}{
		{"10.1.2.3:9464", "Bearer s3cret", 200},
		{"10.1.2.3:9464", "", http.StatusUnauthorized},
	} {
		rec := get(h, tc.host, "/metrics", tc.auth)
		if rec.Code != tc.want {
			t.Errorf("Host %s, auth %q: got %d, want %d (%s)", tc.host, tc.auth, rec.Code, tc.want, rec.Body)
		}
	}
	ln, err := Listen(t.Context(), "0.0.0.0:0", true)
	if err != nil {
		t.Fatalf("Listen(0.0.0.0:0) with remote: %v", err)
	}
	ln.Close()
}

// TestExitAndJobSeries: a unit's last exit status, and a job's runs by
// result (every result at 0 from its first scrape), skipped fires, next
// fire, latest duration, budget and the part of it used, from status.
func TestExitAndJobSeries(t *testing.T) {
	exit := 137
	next := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	st := control.Status{Units: []control.Unit{
		{Name: "web", State: "running", ExitStatus: &exit},
		{Name: "fresh", State: "running"},
		{Name: "batch", State: "failed", Job: &control.Job{Schedule: "0 * * * *", Next: next, LastRun: "2026-12-05T10:00:00Z",
			Runs: map[control.JobResult]int{"success": 4, "budget exceeded": 1}, Skipped: 2, Duration: 75 * time.Second, Budget: 100 * time.Second}},
		{Name: "idle", State: "inactive", Job: &control.Job{Schedule: "0 * * * *", Next: next}},
	}}
	m := New(Options{Status: func(context.Context) (control.Status, error) { return st, nil }})
	f := Scrape(t, m.Handler("", false))
	f.CheckValues(t, []metricstest.Series{
		{"hermes_unit_last_exit_status", []string{"unit", "web"}, 137},
		{"hermes_unit_last_exit_status", []string{"unit", "fresh"}, -1}, // none ended yet: no series
		{"hermes_job_runs_total", []string{"unit", "batch", "result", "success"}, 4},
		{"hermes_job_runs_total", []string{"unit", "batch", "result", "budget_exceeded"}, 1},
		{"hermes_job_runs_total", []string{"unit", "batch", "result", "failed"}, 0},
		{"hermes_job_runs_total", []string{"unit", "idle", "result", "success"}, 0},
		{"hermes_job_runs_total", []string{"unit", "idle", "result", "stopped"}, 0},
		{"hermes_job_runs_total", []string{"unit", "web", "result", "success"}, -1}, // no job
		{"hermes_job_skipped_total", []string{"unit", "batch"}, 2},
		{"hermes_job_next_run_time_seconds", []string{"unit", "idle"}, float64(next.Unix())},
		{"hermes_job_last_run_duration_seconds", []string{"unit", "batch"}, 75},
		{"hermes_job_last_run_duration_seconds", []string{"unit", "idle"}, -1},
		{"hermes_job_budget_seconds", []string{"unit", "batch"}, 100},
		{"hermes_job_last_run_budget_used_ratio", []string{"unit", "batch"}, 0.75},
	})
	metricstest.CheckPromtool(t, scrapeBytes(t, m.Handler("", false)))
}

// get is h's answer to a GET of path sent to host, with auth as the
// Authorization header unless it is empty.
func get(h http.Handler, host, path, auth string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "http://x"+path, nil)
	req.Host = host
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}
