package main

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
)

// remainsRow: a survivor's leader dies while its gateway is dead (killed
// in the middle of stopping it, after the leader took the signal and
// before its child did), and a child of its spawn lives on. The leader is
// gone, so the group cannot be re-adopted; the next gateway must not start
// a second copy of the unit beside the remains: it ends them (found by the
// spawn's tags), logs it, lists them in status, and starts one copy.
func remainsRow(t *testing.T, mode, dir string) string {
	child, copies := leftRemains(t, mode, dir, "keep", "persist_on_release")
	return fmt.Sprintf("remains %s, keep copies %d", aliveWord(child), copies)
}

// ownedRemainsRow: hermesd and its supervisor are killed together while
// an owned unit's leader is on its way out (a stop under way: the leader
// got its signal, its child not yet). The next gateway ends what is left
// of that spawn (found by its tags) before it starts the unit anew: no
// duplicate.
func ownedRemainsRow(t *testing.T, mode, dir string) string {
	child, _ := leftRemains(t, mode, dir, "web", "owned")
	return fmt.Sprintf("remains %s", aliveWord(child))
}

// leftRemains runs one remains row for unit name of ownership: its
// gateway dies (an owned unit's with its supervisor, or it would take the
// unit along), then its leader, while a child of its spawn lives on; the
// next gateway must end the child, say so in status and its log, and run
// one fresh copy. It returns the child and the copies of the unit left.
func leftRemains(t *testing.T, mode, dir, name, ownership string) (proc.Identity, int) {
	state := filepath.Join(dir, "state")
	arg := uniqueSleep()
	shellUnit(t, dir, name, fmt.Sprintf("sleep %s & exec sleep 2000", arg), ownership)
	d := startDaemonWith(t, dir, daemonOpts{role: "gateway", mode: mode})
	leader := leaderOf(t, state, name)
	child := byArgv(t, []string{"sleep", arg}, proc.Identity{}, 10*time.Second)
	killGroupAtEnd(t, leader)
	why := "survivor's leader is gone but processes of its spawn live on"
	if ownership == "owned" {
		d.killWithSupervisor()
		why = "owned group's leader is gone but processes of its spawn live on"
	} else {
		d.kill()
	}
	if err := syscall.Kill(leader.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !goneWithin(leader, 10*time.Second) {
		t.Fatalf("%s's leader %d still alive after SIGKILL", name, leader.PID)
	}
	if !child.Alive() {
		t.Fatalf("%s's child %d died with its leader: nothing left to test", name, child.PID)
	}
	d2 := startDaemonWith(t, dir, daemonOpts{role: "gateway", mode: mode})
	if !goneWithin(child, 10*time.Second) {
		t.Errorf("the remains of the dead %s (child %d) still run beside the new gateway's copy", name, child.PID)
	}
	u := d2.waitStatus(name+" running", func(_ control.Status, u map[string]control.Unit) bool { return runs(u, name) })
	if u[name].PID == leader.PID || u[name].Adopted {
		t.Errorf("%s: pid %d adopted %v, want a fresh copy", name, u[name].PID, u[name].Adopted)
	}
	killGroupAtEnd(t, testkit.Identity(t, u[name].PID))
	// The copy is running by status as soon as it is spawned, a moment
	// before its environment can be read: wait for one copy, never two.
	var cs []proc.Identity
	testkit.Within(5*time.Second, func() bool {
		cs = copies(t, state, name)
		return len(cs) == 1 && cs[0].PID == u[name].PID
	})
	if len(cs) != 1 || cs[0].PID != u[name].PID {
		t.Errorf("copies of %s: %v, want one, pid %d", name, cs, u[name].PID)
	}
	if rec := d2.fullStatus().Recovery; rec == nil || len(rec.Ended) != 1 || rec.Ended[0].Unit != name || rec.Ended[0].Error != "" {
		t.Errorf("status recovery %+v, want %s's remains listed as ended", rec, name)
	}
	if !fileHas(filepath.Join(dir, "hermesd.log"), why, 5*time.Second) {
		t.Errorf("hermesd's log does not say why it ended %s's remains", name)
	}
	return child, len(copies(t, state, name))
}
