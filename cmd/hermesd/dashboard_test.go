package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/metrics/metricstest"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proxy"
)

// dashboardPath is the sample Grafana dashboard the README offers.
const dashboardPath = "../../docs/grafana/hermes.json"

// TestDashboardQueries runs hermesd with real units (a service killed
// once and restarted, a job run by hand with a budget, a model call cut
// by the proxy), scrapes metrics.listen, and checks every query of the
// sample Grafana dashboard against the scrape: each selector's series
// exist, its label matchers and its by (...) labels are the series'
// labels. It also checks the values a dashboard trusts: the restart
// counted once, the whole unit's memory and CPU, the last exit status,
// the job's runs by result and budget.
func TestDashboardQueries(t *testing.T) {
	needsProcesses(t, "hermesd and unit processes")
	queries, err := dashboardQueries(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	d := startScenario(t, map[string]string{
		"batch": fmt.Sprintf("command: [%q]\nenv: {%s: ok}\nschedule: \"0 0 1 1 *\"\nrun_budget_seconds: 60\n", os.Args[0], jobEnv),
	})

	web := d.waitUnit("web", "running and ready", func(u control.Unit) bool { return u.State == control.StateRunning && u.Ready })
	if err := syscall.Kill(web.PID, syscall.SIGKILL); err != nil { // the unit's process, which this test's hermesd started
		t.Fatal(err)
	}
	d.waitUnit("web", "restarted once and ready", func(u control.Unit) bool {
		return u.Restarts == 1 && u.State == control.StateRunning && u.Ready
	})
	if err := d.client().Start(t.Context(), "batch"); err != nil {
		t.Fatal(err)
	}
	d.jobUntil("batch", control.StateExited, "success", 20*time.Second)
	st := d.fullStatus()
	streamCut(t, st)

	// The proxy reports a call once its handler is done, which may be
	// just after the client read the end of the answer.
	var scrape []byte
	var fams metricstest.Families
	testkit.EventuallyOK(t, 10*time.Second, func() error {
		var err error
		if scrape, err = readMetrics(st.Daemon.Metrics); err != nil {
			return err
		}
		fams = parseMetrics(t, scrape)
		if fams.Value("hermes_proxy_requests_total", "provider", "local", "model", "m", "outcome", "cut") != 1 {
			return fmt.Errorf("the cut call is not counted yet:\n%s", scrape)
		}
		return nil
	})
	defer t.Run("promtool", func(t *testing.T) { metricstest.CheckPromtool(t, scrape) })
	for _, q := range queries {
		if err := checkQuery(fams, q); err != nil {
			t.Errorf("dashboard %s: %v", dashboardPath, err)
		}
	}

	fams.CheckValues(t, []metricstest.Series{
		{"hermes_unit_restarts_total", []string{"unit", "web", "cause", "signal"}, 1},
		{"hermes_unit_restarts_total", []string{"unit", "batch", "cause", "exit"}, 0},
		{"hermes_unit_last_exit_status", []string{"unit", "web"}, 128 + 9},
		{"hermes_unit_last_exit_status", []string{"unit", "batch"}, 0},
		{"hermes_job_runs_total", []string{"unit", "batch", "result", "success"}, 1},
		{"hermes_job_runs_total", []string{"unit", "batch", "result", "budget_exceeded"}, 0},
		{"hermes_job_budget_seconds", []string{"unit", "batch"}, 60},
		{"hermes_unit_cpu_seconds_total", []string{"unit", "batch"}, 0}, // it runs nothing now
		{"hermes_unit_memory_bytes", []string{"unit", "batch"}, 0},
	})
	if got := fams.Value("hermes_unit_memory_bytes", "unit", "web"); got <= 0 {
		t.Errorf("hermes_unit_memory_bytes{unit=web} = %v, want the running unit's memory", got)
	}
	if got := fams.Value("hermes_unit_cpu_seconds_total", "unit", "web"); got < 0 {
		t.Errorf("hermes_unit_cpu_seconds_total{unit=web}: no series")
	}
	if t.Failed() {
		t.Log(d.logTail())
	}
}

// streamCut makes one streaming call through the proxy to the silent
// provider, which the stale layer cuts (HERMES_STREAM_STALE_TIMEOUT=1):
// the proxy's series then exist.
func streamCut(t *testing.T, st control.Status) {
	t.Helper()
	if st.Proxy == nil || st.Daemon.Metrics == "" {
		t.Fatalf("status: proxy %+v, metrics %q; want both served", st.Proxy, st.Daemon.Metrics)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+st.Proxy.Listen+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("X-Hermes-Session", "s1")
	tok, err := proxy.LoadToken(st.Daemon.State, false)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "hermes_stale_stream_timeout") {
		t.Fatalf("the silent stream was not cut by the stale layer: %s", body)
	}
}

// readMetrics reads hermesd's /metrics at addr (its status's
// Daemon.Metrics).
func readMetrics(addr string) ([]byte, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// parseMetrics parses a scrape; t fails at once when it does not parse.
func parseMetrics(t *testing.T, scrape []byte) metricstest.Families {
	t.Helper()
	fams, err := metricstest.Parse(bytes.NewReader(scrape))
	if err != nil {
		t.Fatalf("scrape does not parse: %v", err)
	}
	return fams
}
