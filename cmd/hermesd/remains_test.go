package main

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/proc"
)

// remainsRow: a survivor's leader dies while its gateway is dead (killed
// in the middle of stopping it, after the leader took the signal and
// before its child did), and a child of its spawn lives on. The leader is
// gone, so the group cannot be re-adopted; the next gateway must not start
// a second copy of the unit beside the remains: it ends them (found by the
// spawn's tags), logs it, lists them in status, and starts one copy.
func remainsRow(t *testing.T, mode, dir string) string {
	state := filepath.Join(dir, "state")
	arg := uniqueSleep()
	shellUnit(t, dir, "keep", fmt.Sprintf("sleep %s & exec sleep 2000", arg), "persist_on_release")
	d := startDaemonWith(t, dir, daemonOpts{role: "gateway", mode: mode})
	leader := leaderOf(t, state, "keep")
	child := byArgv(t, []string{"sleep", arg}, proc.Identity{}, 10*time.Second)
	killGroupAtEnd(t, leader)
	d.kill()
	if err := syscall.Kill(leader.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !goneWithin(leader, 10*time.Second) {
		t.Fatalf("keep's leader %d still alive after SIGKILL", leader.PID)
	}
	if !child.Alive() {
		t.Fatalf("keep's child %d died with its leader: nothing left to test", child.PID)
	}
	d2 := startDaemonWith(t, dir, daemonOpts{role: "gateway", mode: mode})
	if !goneWithin(child, 10*time.Second) {
		t.Errorf("the remains of the dead keep (child %d) still run beside the new gateway's copy", child.PID)
	}
	u := d2.waitStatus("keep running", func(_ control.Status, u map[string]control.Unit) bool { return runs(u, "keep") })
	if u["keep"].PID == leader.PID || u["keep"].Adopted {
		t.Errorf("keep: pid %d adopted %v, want a fresh copy", u["keep"].PID, u["keep"].Adopted)
	}
	killGroupAtEnd(t, identityOf(t, u["keep"].PID))
	if cs := copies(t, state, "keep"); len(cs) != 1 || cs[0].PID != u["keep"].PID {
		t.Errorf("copies of keep: %v, want one, pid %d", cs, u["keep"].PID)
	}
	if rec := d2.fullStatus().Recovery; rec == nil || len(rec.Ended) != 1 || rec.Ended[0].Unit != "keep" || rec.Ended[0].Error != "" {
		t.Errorf("status recovery %+v, want keep's remains listed as ended", rec)
	}
	if !fileHas(filepath.Join(dir, "hermesd.log"), "survivor's leader is gone but processes of its spawn live on", 5*time.Second) {
		t.Errorf("hermesd's log does not say why it ended keep's remains")
	}
	return fmt.Sprintf("remains %s, keep copies %d", aliveWord(child), len(copies(t, state, "keep")))
}

// identityOf reads a live process's identity.
func identityOf(t *testing.T, pid int) proc.Identity {
	t.Helper()
	id, err := proc.Read(pid)
	if err != nil {
		t.Fatalf("pid %d: %v", pid, err)
	}
	return id
}

// ownedRemainsRow: hermesd and its supervisor are killed together while
// an owned unit's leader is on its way out (a stop under way: the leader
// got its signal, its child not yet). The next gateway ends what is left
// of that spawn (found by its tags) before it starts the unit anew: no
// duplicate.
func ownedRemainsRow(t *testing.T, mode, dir string) string {
	state := filepath.Join(dir, "state")
	arg := uniqueSleep()
	shellUnit(t, dir, "web", fmt.Sprintf("sleep %s & exec sleep 2000", arg), "owned")
	d := startDaemonWith(t, dir, daemonOpts{role: "gateway", mode: mode})
	leader := leaderOf(t, state, "web")
	child := byArgv(t, []string{"sleep", arg}, proc.Identity{}, 10*time.Second)
	killGroupAtEnd(t, leader)
	d.killWithSupervisor()
	if err := syscall.Kill(leader.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !goneWithin(leader, 10*time.Second) {
		t.Fatalf("web's leader %d still alive after SIGKILL", leader.PID)
	}
	if !child.Alive() {
		t.Fatalf("web's child %d died with its leader: nothing left to test", child.PID)
	}
	d2 := startDaemonWith(t, dir, daemonOpts{role: "gateway", mode: mode})
	if !goneWithin(child, 10*time.Second) {
		t.Errorf("the remains of the dead hermesd's web (child %d) still run beside the new gateway's copy", child.PID)
	}
	u := d2.waitStatus("web running", func(_ control.Status, u map[string]control.Unit) bool { return runs(u, "web") })
	killGroupAtEnd(t, identityOf(t, u["web"].PID))
	if rec := d2.fullStatus().Recovery; rec == nil || len(rec.Ended) != 1 || rec.Ended[0].Unit != "web" || rec.Ended[0].Error != "" {
		t.Errorf("status recovery %+v, want web's remains listed as ended", rec)
	}
	if !fileHas(filepath.Join(dir, "hermesd.log"), "owned group's leader is gone but processes of its spawn live on", 5*time.Second) {
		t.Errorf("hermesd's log does not say why it ended web's remains")
	}
	return fmt.Sprintf("remains %s", aliveWord(child))
}
