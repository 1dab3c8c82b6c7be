package main

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/holds"
	"github.com/hermes-units/hermes/internal/testkit"
)

// stopClean stops hermesd as its service manager does (SIGTERM) and waits
// for it to exit.
func (d *hermesd) stopClean() {
	d.t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	if err := <-d.done; err != nil {
		d.t.Fatalf("hermesd's clean stop: %v", err)
	}
}

// twoUnits starts hermesd, as gateway, over units a and b (the test
// binary as a unit) in a fresh directory, which it returns.
func twoUnits(t *testing.T) (string, *hermesd) {
	t.Helper()
	dir := t.TempDir()
	testkit.WriteUnits(t, filepath.Join(dir, "units"), map[string]string{"a.yaml": unitYAML(""), "b.yaml": unitYAML("")})
	return dir, startDaemon(t, dir, "gateway")
}

// wantKept checks, right after hermesd said READY=1 (every unit has had
// its first chance to start), that unit is kept stopped as state says and
// has no process.
func wantKept(t *testing.T, d *hermesd, unit string, state control.UnitState, when string) {
	t.Helper()
	u, ok := d.status()[unit]
	if !ok || u.State != state || u.PID != 0 {
		t.Errorf("%s %s: %+v, want %s with no pid", unit, when, u, state)
	}
}

// TestDisableSurvivesRestarts: a unit disabled through the control API
// stays stopped when hermesd restarts after a clean stop and after a kill
// -9, start is refused, and enable starts it.
func TestDisableSurvivesRestarts(t *testing.T) {
	needsProcesses(t, "hermesd and unit processes")
	dir, d := twoUnits(t)
	both := runningAll("a", "b")
	d.waitStatus("a and b running", both)
	c := d.client()
	if err := c.Disable(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	u := d.status()["a"]
	if u.State != "disabled" || !u.Disabled || u.PID != 0 {
		t.Fatalf("a after disable: %+v, want disabled with no pid", u)
	}
	st, err := holds.Open(filepath.Join(dir, "state"), "").Load()
	if err != nil || len(st.Disabled) != 1 || st.Disabled[0] != "a" {
		t.Fatalf("%s after disable: %+v, %v; want a disabled", holds.FileName, st, err)
	}

	d.stopClean()
	d = startDaemon(t, dir, "gateway")
	wantKept(t, d, "a", "disabled", "after a clean restart of hermesd")
	if err := d.client().Start(t.Context(), "a"); !errors.Is(err, control.ErrConflict) {
		t.Errorf("start of a disabled unit: got %v, want a conflict", err)
	}

	d.kill()
	d = startDaemon(t, dir, "gateway")
	wantKept(t, d, "a", "disabled", "after kill -9 of hermesd")
	d.waitStatus("b running again", runningAll("b"))

	if err := d.client().Enable(t.Context(), "a", true); err != nil {
		t.Fatal(err)
	}
	d.waitStatus("a running once enabled", both)
	d.stopClean()
	d = startDaemon(t, dir, "gateway")
	d.waitStatus("a and b running at the next start", both)
}

// TestStopSurvivesCrash: a unit stopped with `hermesctl stop` stays stopped
// when hermesd is killed with kill -9 and started again in the same boot
// (it used to come back); start clears the stop for the next run too.
func TestStopSurvivesCrash(t *testing.T) {
	needsProcesses(t, "hermesd and unit processes")
	dir, d := twoUnits(t)
	d.waitStatus("a running", runningAll("a"))
	if err := d.client().Stop(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	d.kill()
	d = startDaemon(t, dir, "gateway")
	wantKept(t, d, "a", "stopped", "after kill -9 of hermesd")
	if u := d.status()["a"]; !u.Stopped {
		t.Errorf("a after kill -9: %+v, want stopped set", u)
	}
	if err := d.client().Start(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	d.waitStatus("a running after start", runningAll("a"))
	d.kill()
	d = startDaemon(t, dir, "gateway")
	d.waitStatus("a running after another kill -9", runningAll("a"))
}
