package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"time"
)

// The scrape section: what one GET /metrics costs with many idle units, in
// pgroup mode, where the whole-unit memory and CPU are summed over each
// unit's processes (the process table is read once a scrape).
const (
	scrapeUnits  = 1000
	scrapeTrials = 20
)

func benchScrape(ctx context.Context, tmp, bin string) ([]Row, error) {
	d, err := startBenchDaemonN(ctx, bin, filepath.Join(tmp, "d"), sleepUnit, metricsConfig, scrapeUnits, "--supervisor-mode", "pgroup")
	if err != nil {
		return nil, err
	}
	defer d.stop()
	if _, err := d.waitAllReady(ctx); err != nil {
		return nil, err
	}
	st, err := d.status(ctx)
	if err != nil {
		return nil, err
	}
	addr := st.Daemon.Metrics
	var times []time.Duration
	size := 0
	for range scrapeTrials {
		t0 := time.Now()
		b, err := get(ctx, "http://"+addr+"/metrics")
		if err != nil {
			return nil, d.fail(err)
		}
		times = append(times, time.Since(t0))
		size = len(b)
		if !strings.Contains(string(b), `hermes_unit_memory_bytes{unit="u999"}`) {
			return nil, d.fail(fmt.Errorf("the scrape has no memory of unit u999"))
		}
	}
	if _, err := d.stop(); err != nil {
		return nil, err
	}
	return []Row{{
		Figure: fmt.Sprintf("metrics scrape, %d idle units (%s mode)", scrapeUnits, d.mode),
		Value:  fmt.Sprintf("median %v, max %v (%d KiB)", roundDur(percentile(times, 0.5)), roundDur(percentile(times, 1)), size>>10),
		Method: fmt.Sprintf("%d GET /metrics in a row on loopback, each timed from the request to the last byte; every unit an owned `sleep`; a scrape reads the status, then each process's /proc/PID/stat once for the whole-unit memory and CPU", scrapeTrials),
	}}, nil
}

func get(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}
