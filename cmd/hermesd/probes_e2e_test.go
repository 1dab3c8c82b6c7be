package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/internal/testkit"
)

// probeGet is GET http://addr/path: the status code and the body.
func probeGet(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestProbes: with probes.listen set, a live hermesd answers /livez 200
// while a unit is not ready yet, and /readyz 503 naming it; once that unit
// is stopped by command (no longer enabled), /readyz is 200.
func TestProbes(t *testing.T) {
	needsProcesses(t, "hermesd processes")
	dir := t.TempDir()
	config := filepath.Join(dir, "hermes.yaml")
	writeFile(t, config, "probes:\n  listen: 127.0.0.1:0\n")
	testkit.WriteUnits(t, filepath.Join(dir, "units"), map[string]string{
		"web.yaml":  unitYAML(""),
		"slow.yaml": unitYAML("") + "ready: {log: never-printed}\n",
	})
	d := startDaemonWith(t, dir, daemonOpts{role: "gateway", config: config})
	log, _ := os.ReadFile(filepath.Join(dir, "hermesd.log"))
	m := regexp.MustCompile(`msg="probes listening" listen=(\S+)`).FindSubmatch(log)
	if m == nil {
		t.Fatalf("no probes listening line in the log:\n%s", log)
	}
	addr := string(m[1])

	testkit.EventuallyOK(t, reloadDeadline, func() error {
		code, body := probeGet(t, addr, "/readyz")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "unit slow: ") || strings.Contains(body, "unit web") {
			return fmt.Errorf("/readyz: %d %q, want 503 naming slow only", code, body)
		}
		return nil
	})
	if code, body := probeGet(t, addr, "/livez"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/livez: %d %q, want 200 ok", code, body)
	}
	if err := d.client().Stop(t.Context(), "slow"); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyOK(t, reloadDeadline, func() error {
		if code, body := probeGet(t, addr, "/readyz"); code != http.StatusOK || body != "ok\n" {
			return fmt.Errorf("/readyz after slow was stopped: %d %q, want 200 ok", code, body)
		}
		return nil
	})
}

// TestProbesNotLoopback: probes.listen on an address other than loopback
// is refused at start (exit 2) unless probes.remote says so.
func TestProbesNotLoopback(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "hermes.yaml")
	writeFile(t, config, "probes:\n  listen: 0.0.0.0:0\n")
	code, stderr := runHermesd(t, "--units", filepath.Join(dir, "units"), "--state", filepath.Join(dir, "state"),
		"--socket", filepath.Join(dir, "state", "ctl.sock"), "--config", config)
	if code != exitcode.Usage || !strings.Contains(stderr, "set probes.remote: true") {
		t.Errorf("exit %d, stderr %q; want %d and what to set", code, stderr, exitcode.Usage)
	}
}
