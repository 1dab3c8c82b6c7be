package supervisor

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
)

// TestScriptChurn: an unregistration leaves the id in the script's list
// until enough are unregistered to compact it; whatever the moment, EOF
// signals exactly the groups registered then. Group "back" is registered,
// unregistered, dropped by a compaction, then registered again; group
// "gone" is unregistered and never comes back. Hundreds of ids of groups
// that do not exist (pids over the kernel's limit) come and go between,
// so that the list is compacted several times.
func TestScriptChurn(t *testing.T) {
	back, backID := sleeper(t)
	backKilled := reaper(back)
	gone, goneID := sleeper(t)
	stay, stayID := sleeper(t)
	stayKilled := reaper(stay)
	t.Cleanup(func() { gone.Process.Kill(); gone.Wait() })
	p, err := startShell(300*time.Millisecond, syscall.Getpgrp(), "", "", "proc")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	reg := func(id string, pgid, leader int, start uint64) {
		fmt.Fprintf(&b, "R %s %d %d %d - -\n", id, pgid, leader, start)
	}
	reg("stay", stayID.PID, stayID.PID, stayID.StartTime)
	reg("back", backID.PID, backID.PID, backID.StartTime)
	reg("gone", goneID.PID, goneID.PID, goneID.StartTime)
	b.WriteString("U back\nU gone\n")
	const far = 1 << 23 // over pid_max: no such group
	for round := range 3 {
		for i := range 200 {
			reg(fmt.Sprintf("n%d_%d", round, i), far+i, far+i, 0)
		}
		for i := range 200 {
			fmt.Fprintf(&b, "U n%d_%d\n", round, i)
		}
	}
	reg("back", backID.PID, backID.PID, backID.StartTime)
	b.WriteString("U gone\n") // twice: still nothing
	if err := rawWrite(p, []byte(b.String())); err != nil {
		t.Fatal(err)
	}
	p.Close()
	testkit.Receive(t, 20*time.Second, p.Exited(), "supervisor did not exit after EOF")
	if !stayKilled() {
		t.Error("a group registered throughout survived EOF")
	}
	if !backKilled() {
		t.Error("a group registered again after a compaction survived EOF")
	}
	if err := syscall.Kill(gone.Process.Pid, 0); err != nil {
		t.Errorf("an unregistered group was signalled: %v", err)
	}
}
