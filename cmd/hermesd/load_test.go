package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
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
	// loadTestEnv tags each unit process with "<test dir>/<unit>", so that
	// a /proc scan finds this test's processes and their unit.
	loadTestEnv = "HERMESD_LOAD_UNIT"
)

// loadTestYAML is a unit of generation gen. The unit is coreutils sleep, not
// the test binary: fifty race-instrumented helpers would cost a gigabyte.
// sleep sums its arguments, so the generation rides in argv, where /proc
// shows which version a process runs.
func loadTestYAML(tag, name string, gen int) string {
	return fmt.Sprintf("command: [sleep, \"100000\", \"%d\"]\nenv: {%s: %q}\ntimeouts: {stop: 5s}\n", gen, loadTestEnv, tag+"/"+name)
}

// loadTestSave writes a unit file as editors do: a temp file renamed onto it.
func loadTestSave(t *testing.T, dir, name, data string) {
	t.Helper()
	tmp := filepath.Join(dir, name+".yaml.tmp")
	if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name+".yaml")); err != nil {
		t.Fatal(err)
	}
}

// loadProcess is one unit process found in /proc.
type loadProcess struct {
	pid, pgid int
	start     uint64
	unit      string
	gen       int
}

// loadRead reads pid as a unit process of tag; ok is false for any other
// process, a zombie, or a spawn not yet exec'd into sleep.
func loadRead(tag string, pid int) (p loadProcess, ok bool) {
	argv, err := proc.Cmdline(pid)
	if err != nil || len(argv) != 3 || argv[0] != "sleep" {
		return p, false
	}
	env, err := proc.Environ(pid)
	if err != nil {
		return p, false
	}
	for _, kv := range env {
		if u, found := strings.CutPrefix(kv, loadTestEnv+"="+tag+"/"); found {
			p.unit = u
		}
	}
	st, err := proc.ReadStat(pid)
	if p.unit == "" || err != nil || st.Zombie() {
		return p, false
	}
	if p.gen, err = strconv.Atoi(argv[2]); err != nil {
		return p, false
	}
	p.pid, p.pgid, p.start = pid, st.PGID, st.StartTime
	return p, true
}

func loadScan(tag string) []loadProcess {
	pids, _ := proc.Pids()
	var out []loadProcess
	for _, pid := range pids {
		if p, ok := loadRead(tag, pid); ok {
			out = append(out, p)
		}
	}
	return out
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
	ps := loadScan(w.tag)
	by := map[string][]loadProcess{}
	for _, p := range ps {
		by[p.unit] = append(by[p.unit], p)
		if n, ok := w.newest[p.unit]; ok && p.gen < n {
			// p was alive after a newer generation had started: it either
			// ran beside it or started after it.
			w.violations = append(w.violations, fmt.Sprintf("unit %s: generation %d (pid %d) running after generation %d was seen", p.unit, p.gen, p.pid, n))
		}
		w.newest[p.unit] = max(w.newest[p.unit], p.gen)
	}
	for unit, group := range by {
		pgids := map[int]bool{}
		for _, p := range group {
			pgids[p.pgid] = true
		}
		if len(pgids) < 2 {
			continue
		}
		// Read them again in the order first read: if all are still the
		// same processes, all were alive at the moment the first one was
		// read again.
		same := true
		for _, p := range group {
			q, ok := loadRead(w.tag, p.pid)
			same = same && ok && q.start == p.start
		}
		if same {
			w.violations = append(w.violations, fmt.Sprintf("unit %s: %d live groups at once: %+v", unit, len(pgids), group))
		}
	}
}

// loadAt reports which units run which generation: status says running and
// the process at its pid runs that generation.
func loadAt(ctx context.Context, c *control.Client, tag string) (map[string]int, map[string]int, error) {
	st, err := c.Status(ctx)
	if err != nil {
		return nil, nil, err
	}
	gens, pids := map[string]int{}, map[string]int{}
	for _, u := range st.Units {
		if u.State != "running" || u.PID == 0 {
			continue
		}
		if p, ok := loadRead(tag, u.PID); ok && p.unit == u.Name {
			gens[u.Name], pids[u.Name] = p.gen, u.PID
		}
	}
	return gens, pids, nil
}

// loadUntil polls status until every unit runs its wanted generation.
func loadUntil(t *testing.T, c *control.Client, tag string, want map[string]int) map[string]int {
	t.Helper()
	var pids map[string]int
	// Polling: the daemon sends no event when a reload has settled.
	testkit.EventuallyOK(t, loadTestSettle, func() error {
		gens, p, err := loadAt(t.Context(), c, tag)
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		pids = p
		var off []string
		for n, g := range want {
			if gs, running := gens[n]; !running || gs != g {
				off = append(off, fmt.Sprintf("%s runs %d (running %v), want %d", n, gs, running, g))
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
		loadTestSave(t, ud, names[i], loadTestYAML(tag, names[i], 0))
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
		loadTestSave(t, ud, name, loadTestYAML(tag, name, k+1))
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
	if ps := loadScan(tag); len(ps) != loadTestUnits {
		t.Errorf("got %d unit processes after settling, want %d: %+v", len(ps), loadTestUnits, ps)
	}

	d.cmd.Process.Signal(syscall.SIGTERM)
	if err := <-d.done; err != nil {
		t.Errorf("hermesd exit after TERM: %v", err)
	}
	if left := loadScan(tag); len(left) > 0 {
		for _, p := range left {
			syscall.Kill(p.pid, syscall.SIGKILL)
		}
		t.Errorf("got %d unit processes after a clean stop, want 0: %+v", len(left), left)
	}
}
