package loadunits

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
)

// startUnit starts sleep as generation gen of unit in the run tag, in a
// process group of its own; cleanup kills and reaps it.
func startUnit(t *testing.T, tag, unit, gen string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "100000", gen)
	cmd.Env = append(os.Environ(), Env+"="+tag+"/"+unit)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep to run: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// TestScanAndDuplicates: Scan finds the run's unit processes once they
// run sleep, with their generation; two of one unit in two groups are a
// duplicate, one of another unit is not; Running keeps the process status
// names by its pid.
func TestScanAndDuplicates(t *testing.T) {
	tag := filepath.Base(t.TempDir())
	a1 := startUnit(t, tag, "a", "1")
	startUnit(t, tag, "a", "2")
	startUnit(t, tag, "b", "7")
	var ps []Process
	testkit.Eventually(t, 10*time.Second, "three unit processes exec'd into sleep", func() bool {
		ps = Scan(tag)
		return len(ps) == 3
	})
	gens := map[int]int{}
	for _, p := range ps {
		gens[p.PID] = p.Gen
	}
	if gens[a1.Process.Pid] != 1 {
		t.Errorf("Scan: %+v, want pid %d at generation 1", ps, a1.Process.Pid)
	}
	dups := Duplicates(tag, ps)
	if len(dups) != 1 || len(dups[0]) != 2 || dups[0][0].Unit != "a" {
		t.Errorf("Duplicates = %+v, want the two processes of a", dups)
	}
	st := control.Status{Units: []control.Unit{
		{Name: "a", State: control.StateRunning, PID: a1.Process.Pid},
		{Name: "b", State: control.StateRunning, PID: a1.Process.Pid}, // not b's process
	}}
	if r := Running(st, tag); len(r) != 1 || r["a"].Gen != 1 {
		t.Errorf("Running = %+v, want a at generation 1 only", r)
	}
}
