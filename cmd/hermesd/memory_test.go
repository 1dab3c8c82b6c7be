package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime/metrics"
	"testing"
)

// TestGCPercent: hermesd runs its collector at gcPercent unless GOGC is set
// in its environment, which wins; as the runtime reports it on the metrics
// endpoint (go_gc_gogc_percent).
func TestGCPercent(t *testing.T) {
	needsProcesses(t, "hermesd processes")
	for _, tc := range []struct {
		name string
		env  string // GOGC in hermesd's environment; "" for none
		want float64
	}{
		{"unset", "", gcPercent},
		{"runtime default", "100", 100},
		{"other", "200", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeUnits(t, dir, nil)
			config := filepath.Join(dir, "hermes.yaml")
			if err := os.WriteFile(config, []byte("metrics: {listen: \"127.0.0.1:0\"}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			// The last GOGC in the list wins over the test's own; empty reads as unset.
			d := startDaemonWith(t, dir, daemonOpts{role: "gateway", config: config, env: []string{"GOGC=" + tc.env}})
			scrape, err := readMetrics(d.fullStatus().Daemon.Metrics)
			if err != nil {
				t.Fatal(err)
			}
			fams := parseMetrics(t, scrape)
			if got := fams.Value("go_gc_gogc_percent"); got != tc.want {
				t.Errorf("go_gc_gogc_percent with GOGC=%q: got %v, want %v", tc.env, got, tc.want)
			}
		})
	}
}

// forcedGCs is the number of collections forced so far (runtime.GC,
// debug.FreeOSMemory).
func forcedGCs() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestReturnMemory: returnMemory collects and returns the free heap once
// the start burst is over, and does nothing when ctx ends first.
func TestReturnMemory(t *testing.T) {
	for _, tc := range []struct {
		name    string
		started bool // close started; else cancel ctx
		want    uint64
	}{
		{"start burst over", true, 1},
		{"stopped first", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			started := make(chan struct{})
			before := forcedGCs()
			done := make(chan struct{})
			go func() { returnMemory(ctx, started); close(done) }()
			if tc.started {
				close(started)
			} else {
				cancel()
			}
			<-done
			if got := forcedGCs() - before; got != tc.want {
				t.Errorf("forced collections: got %d, want %d", got, tc.want)
			}
		})
	}
}
