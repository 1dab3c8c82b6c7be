package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/reconciler"
)

// TestReadoptedJobKeepsDeadline: an adoptable job with a run budget whose
// hermesd dies (SIGKILL) is re-adopted by the next hermesd and still
// stopped at its budget, marked "budget exceeded". A re-adopted job used
// to have no budget at all: one of 15 s ran ~53 s, and one that never
// exits would run for ever.
func TestReadoptedJobKeepsDeadline(t *testing.T) {
	needsProcesses(t, "hermesd processes")
	const budget = 6 * time.Second
	dir := t.TempDir()
	testkit.WriteUnits(t, filepath.Join(dir, "units"), map[string]string{
		"agent.yaml": fmt.Sprintf("command: [%q]\nenv: {%s: unit}\nschedule: \"0 0 1 1 *\"\nrun_budget_seconds: %d\n",
			os.Args[0], roleEnv, int(budget/time.Second)) + ownershipYAML("adoptable"),
	})
	d := startDaemon(t, dir, "gateway")
	if err := d.client().Start(t.Context(), "agent"); err != nil {
		t.Fatal(err)
	}
	u := d.waitUnit("agent", "running", func(u control.Unit) bool { return u.State == "running" && u.PID > 0 })
	pid, started := u.PID, time.Now()
	leader, err := proc.Read(pid)
	if err != nil {
		t.Fatal(err)
	}
	d.kill()

	d2 := startDaemon(t, dir, "gateway")
	d2.waitUnit("agent", "re-adopted", func(u control.Unit) bool { return u.Adopted && u.PID == pid })
	testkit.EventuallyOK(t, budget+30*time.Second, func() error {
		if leader.Alive() {
			return fmt.Errorf("the re-adopted job (pid %d) still runs %v after it started with a budget of %v%s",
				pid, time.Since(started).Round(time.Second), budget, d2.logTail())
		}
		return nil
	})
	u = d2.waitUnit("agent", "its result", func(u control.Unit) bool { return u.Job != nil && u.Job.Result != reconciler.ResultRunning })
	if u.Job.Result != reconciler.ResultBudgetExceeded {
		t.Errorf("the re-adopted job's result: %q (%s), want %q", u.Job.Result, u.Error, reconciler.ResultBudgetExceeded)
	}
}
