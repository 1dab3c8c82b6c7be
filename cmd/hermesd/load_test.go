package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/internal/testkit/loadunits"
)

// The correctness half of the load figures of `make bench` (section load):
// the real daemon, units edited by atomic saves faster than a reload
// settles, status asked all along.
const (
	loadTestUnits  = 50
	loadTestHot    = 20 // the edits go to the first loadTestHot units
	loadTestEdits  = 30
	loadTestRate   = 10 // edits per second
	loadTestSettle = 30 * time.Second
)

// loadTestSave writes generation gen of unit name (loadunits.Save).
func loadTestSave(t *testing.T, dir, tag, name string, gen int) {
	t.Helper()
	if err := loadunits.Save(dir, name, loadunits.YAML(tag, name, gen)); err != nil {
		t.Fatal(err)
	}
}

// loadWatcher scans /proc until stopped and records two kinds of violation:
// two live groups of one unit at one moment, and a unit running an older
// generation after a newer one was seen running.
type loadWatcher struct {
	tag        string
	newest     map[string]int // unit → highest generation seen
	violations []string
}

func (w *loadWatcher) scan() {
	ps := loadunits.Scan(w.tag)
	for _, p := range ps {
		if n, ok := w.newest[p.Unit]; ok && p.Gen < n {
			// p was alive after a newer generation had started: it either
			// ran beside it or started after it.
			w.violations = append(w.violations, fmt.Sprintf("unit %s: generation %d (pid %d) running after generation %d was seen", p.Unit, p.Gen, p.PID, n))
		}
		w.newest[p.Unit] = max(w.newest[p.Unit], p.Gen)
	}
	for _, group := range loadunits.Duplicates(w.tag, ps) {
		w.violations = append(w.violations, fmt.Sprintf("unit %s: live groups at once: %+v", group[0].Unit, group))
	}
}

// loadUntil polls status until every unit runs its wanted generation.
func loadUntil(t *testing.T, c *control.Client, tag string, want map[string]int) map[string]int {
	t.Helper()
	var pids map[string]int
	// Polling: the daemon sends no event when a reload has settled.
	testkit.EventuallyOK(t, loadTestSettle, func() error {
		st, err := c.Status(t.Context())
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		running := loadunits.Running(st, tag)
		pids = map[string]int{}
		for n, p := range running {
			pids[n] = p.PID
		}
		var off []string
		for n, g := range want {
			if p, ok := running[n]; !ok || p.Gen != g {
				off = append(off, fmt.Sprintf("%s runs %d (running %v), want %d", n, p.Gen, ok, g))
			}
		}
		if len(off) == 0 {
			return nil
		}
		return fmt.Errorf("%d/%d units on their last edit: %s", len(want)-len(off), len(want), strings.Join(off, "; "))
	})
	return pids
}

// TestLoadEditsApplied edits units by atomic saves while earlier edits are
// still being applied, and checks that every unit ends on its last edit,
// that no unit ever ran two groups at once or went back to an older
// version, that untouched units keep their pid, that status answered
// throughout, and that a clean stop leaves no unit process.
func TestLoadEditsApplied(t *testing.T) {
	dir := t.TempDir()
	tag := filepath.Base(dir)
	ud := testkit.WriteUnits(t, filepath.Join(dir, "units"), nil)
	want := map[string]int{}
	names := make([]string, loadTestUnits)
	for i := range names {
		names[i] = fmt.Sprintf("l%02d", i)
		want[names[i]] = 0
		loadTestSave(t, ud, tag, names[i], 0)
	}
	d := startDaemon(t, dir, "gateway")
	c, err := control.Dial(d.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before := loadUntil(t, c, tag, want)

	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var statusErrs []error
	statuses := 0
	wg.Go(func() {
		for ctx.Err() == nil {
			if _, err := c.Status(ctx); err != nil && ctx.Err() == nil {
				statusErrs = append(statusErrs, err)
			}
			statuses++
		}
	})
	w := &loadWatcher{tag: tag, newest: map[string]int{}}
	wg.Go(func() {
		for ctx.Err() == nil {
			w.scan()
		}
	})

	rng := rand.New(rand.NewPCG(3, 7))
	tick := time.NewTicker(time.Second / loadTestRate)
	for k := range loadTestEdits {
		<-tick.C // pacing the edits, not synchronising
		name := names[rng.IntN(loadTestHot)]
		want[name] = k + 1
		loadTestSave(t, ud, tag, name, k+1)
	}
	tick.Stop()
	after := loadUntil(t, c, tag, want)
	stop()
	wg.Wait()

	if len(statusErrs) > 0 {
		t.Errorf("status failed %d times out of %d during the edits; first: %v", len(statusErrs), statuses, statusErrs[0])
	}
	for _, v := range w.violations {
		t.Error(v)
	}
	for _, n := range names[loadTestHot:] {
		if after[n] != before[n] {
			t.Errorf("unit %s was never edited but its pid changed from %d to %d", n, before[n], after[n])
		}
	}
	if ps := loadunits.Scan(tag); len(ps) != loadTestUnits {
		t.Errorf("got %d unit processes after settling, want %d: %+v", len(ps), loadTestUnits, ps)
	}

	d.cmd.Process.Signal(syscall.SIGTERM)
	if err := <-d.done; err != nil {
		t.Errorf("hermesd exit after TERM: %v", err)
	}
	if left := loadunits.Scan(tag); len(left) > 0 {
		for _, p := range left {
			syscall.Kill(p.PID, syscall.SIGKILL)
		}
		t.Errorf("got %d unit processes after a clean stop, want 0: %+v", len(left), left)
	}
}
