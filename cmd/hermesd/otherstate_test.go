package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
)

// TestOtherStateDirSurvivors: the survivors of a gateway outlive its death
// even when, meanwhile, a gateway on another state directory rebuilds a
// corrupt ledger. Gateway A spawns an adoptable job and a persist_on_release
// unit and is killed with SIGKILL; gateway B starts on its own state
// directory, whose ledger is corrupt, with units of other names, and stops
// cleanly. B's ledger is rebuilt from B's own spawns only: it neither lists
// nor stops A's survivors (an adoptable survivor that B does not declare
// would be stopped as a removed unit). The next gateway on A's directory
// re-adopts both, same pids.
func TestOtherStateDirSurvivors(t *testing.T) {
	needsProcesses(t, "hermesd processes")
	aDir := t.TempDir()
	aState := filepath.Join(aDir, "state")
	writeUnits(t, aDir, map[string]string{"job": "adoptable", "keep": "persist_on_release"})
	a := startDaemon(t, aDir, "gateway")
	ids := map[string]proc.Identity{}
	for _, n := range []string{"job", "keep"} {
		ids[n] = leaderOf(t, aState, n)
		killGroupAtEnd(t, ids[n])
	}
	a.kill()
	for n, id := range ids {
		if !id.Alive() {
			t.Fatalf("%s (pid %d) died with its gateway's SIGKILL; want it to survive", n, id.PID)
		}
	}

	bDir := t.TempDir()
	bState := filepath.Join(bDir, "state")
	writeUnits(t, bDir, map[string]string{"web": "owned"})
	if err := os.Mkdir(bState, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bState, ledger.FileName), []byte(`{"version": 1, "entries": [`), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startDaemon(t, bDir, "gateway")
	for n, u := range b.status() {
		if _, ok := ids[n]; ok {
			t.Errorf("gateway B (another state directory) lists unit %s: %+v; want none of A's survivors", n, u)
		}
	}
	for _, e := range ledgerEntries(t, bState) {
		for n, id := range ids {
			if e.Leader.PID == id.PID && e.Leader.StartTime == id.StartTime {
				t.Errorf("B's rebuilt ledger records A's %s (pid %d): %+v", n, id.PID, e)
			}
		}
	}
	// A clean stop waits for every stop it began: whatever B meant to do
	// to A's groups is done once it has exited.
	b.cmd.Process.Signal(os.Interrupt)
	if err := <-b.done; err != nil {
		t.Errorf("gateway B after INT: %v, want exit 0", err)
	}
	for n, id := range ids {
		if !id.Alive() {
			t.Errorf("%s (pid %d) of gateway A died while gateway B ran on another state directory", n, id.PID)
		}
	}

	a2 := startDaemon(t, aDir, "gateway")
	after := a2.status()
	for n, id := range ids {
		if u := after[n]; u.PID != id.PID || !u.Adopted || u.State != "running" {
			t.Errorf("%s after A's restart: pid %d adopted %v state %s, want pid %d re-adopted and running", n, u.PID, u.Adopted, u.State, id.PID)
		}
	}
}
