package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
)

// TestStoppedUnitStaysStopped: a unit stopped with `hermesctl stop` is not
// started again by an edit of its file through the watcher; `start` runs
// the edited version.
func TestStoppedUnitStaysStopped(t *testing.T) {
	needsProcesses(t, "hermesd and unit processes")
	dir := t.TempDir()
	ud := testkit.WriteUnits(t, filepath.Join(dir, "units"), map[string]string{"a.yaml": unitYAML("")})
	path := func(name string) string { return filepath.Join(ud, name+".yaml") }
	d := startDaemon(t, dir, "gateway")
	d.waitStatus("a running", runningAll("a"))
	c := d.client()
	if err := c.Stop(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	// The edit, then a new unit: once b runs, hermesd has read a's edit
	// (each change rescans the whole directory).
	atomicSave(t, path("a"), unitYAML(", X: edited"))
	if err := os.WriteFile(path("b"), []byte(unitYAML("")), 0o600); err != nil {
		t.Fatal(err)
	}
	u := d.waitStatus("b running", runningAll("b"))
	if a := u["a"]; a.State != "stopped" || a.PID != 0 {
		t.Errorf("a after an edit of its file: %s with pid %d, want stopped (by command)", a.State, a.PID)
	}
	if err := c.Start(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	u = d.waitStatus("a running again", runningAll("a"))
	env, err := proc.Environ(u["a"].PID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(env, "X=edited") {
		t.Errorf("a started without X=edited in its environment: want the edited version")
	}
}

// TestUnitFileOverAdoptedName: a unit file named as a group adopted with
// `adopt --as` waits, status says why, and it starts once the group is
// gone.
func TestUnitFileOverAdoptedName(t *testing.T) {
	needsProcesses(t, "hermesd and unit processes")
	dir := t.TempDir()
	ud := testkit.WriteUnits(t, filepath.Join(dir, "units"), nil)
	d := startDaemon(t, dir, "gateway")
	c := d.client()

	ext := startExternal(t)
	pgid := ext.Process.Pid
	if _, err := c.Adopt(t.Context(), control.AdoptRequest{PGID: pgid, As: "web"}); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(filepath.Join(ud, "web.yaml"), []byte(unitYAML("")), 0o600); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("name web is taken by an adopted group (pgid %d); stop it or rename the unit file", pgid)
	u := d.waitStatus("web's clash in status", func(_ control.Status, u map[string]control.Unit) bool { return u["web"].Error == want })
	if w := u["web"]; w.PID != pgid || !w.Adopted {
		t.Errorf("web while its name is taken: pid %d adopted %v, want the adopted group %d", w.PID, w.Adopted, pgid)
	}

	syscall.Kill(-pgid, syscall.SIGKILL)
	ext.Wait()
	u = d.waitStatus("web started from its file", func(_ control.Status, u map[string]control.Unit) bool {
		w, ok := u["web"]
		return running(w, ok) && w.PID != pgid
	})
	if w := u["web"]; w.Adopted || w.Error != "" {
		t.Errorf("web from its file: adopted %v error %q, want a plain unit", w.Adopted, w.Error)
	}
}
