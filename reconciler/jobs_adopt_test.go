//go:build linux

package reconciler

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/timeouts"
	"github.com/hermes-units/hermes/units"
	"golang.org/x/sys/unix"
)

// TestReadoptedJobKeepsBudget: an adoptable job re-adopted from a dead
// hermesd's ledger keeps the deadline it was spawned with: its run began
// when its leader did (10 s before, of a 15 s budget), so it is stopped
// 5 s after the re-adoption, not never; its run is registered with the
// proxy again with what remains, and unregistered at the deadline.
func TestReadoptedJobKeepsBudget(t *testing.T) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		t.Fatal(err)
	}
	tick := time.Second / proc.ClockTicks
	const ago, budget = 10 * time.Second, 15 * time.Second
	leader := proc.Identity{PID: 5_100_000, StartTime: uint64((time.Duration(ts.Nano()) - ago) / tick)}
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, jobSpec("agent", "0 0 1 1 *", func(s *units.Spec) {
			s.RunBudget = budget
			s.Ownership = units.Adoptable
		}))
		runs := &fakeRuns{registered: map[string]string{}, budgets: map[string]*timeouts.Budget{}}
		h.run(New(Options{
			Role: units.RoleGateway, Spawner: h.fs, StateDir: t.TempDir(), Load: h.load, Runs: runs, ProxyURL: testProxyURL,
			Checkpoint: survivorCheckpoint{[]Survivor{{Unit: "agent", Ownership: units.Adoptable,
				Group: supervisor.Group{Unit: "agent", PGID: leader.PID, Leader: leader}}}},
		}))
		synctest.Wait()
		t0 := time.Now()
		u := h.unit("agent")
		if !u.Adopted || u.State != "running" {
			t.Fatalf("agent: state %s adopted %v, want running, re-adopted", u.State, u.Adopted)
		}
		if u.Job == nil || u.Job.Deadline.IsZero() || u.Job.Deadline.After(t0.Add(budget-ago+time.Second)) {
			t.Errorf("agent's job status %+v, want its deadline about %v from now", u.Job, budget-ago)
		}
		runs.mu.Lock()
		var id string
		var b *timeouts.Budget
		for k, v := range runs.budgets {
			id, b = k, v
		}
		runs.mu.Unlock()
		if b == nil || b.Total() != budget || b.Remaining() > budget-ago+time.Second {
			t.Errorf("proxy registration: run %q budget %v, want the run registered again with about %v of %v left", id, b, budget-ago, budget)
		}

		time.Sleep(budget - ago - time.Second)
		synctest.Wait()
		if stops := h.fs.stopOrder(); len(stops) != 0 {
			t.Fatalf("stopped %v before the run's deadline", stops)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if stops := h.fs.stopOrder(); !slices.Equal(stops, []string{"agent"}) {
			t.Errorf("stops by the run's deadline (%v after the re-adoption): %v, want agent", time.Since(t0), stops)
		}
		runs.mu.Lock()
		unreg := slices.Clone(runs.unregistered)
		runs.mu.Unlock()
		if id == "" || !slices.Contains(unreg, id) {
			t.Errorf("unregistered %v, want run %q", unreg, id)
		}
	})
}
