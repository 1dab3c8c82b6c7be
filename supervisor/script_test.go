package supervisor

import (
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/proc"
)

// sleeper starts sleep in its own process group.
func sleeper(t *testing.T) (*exec.Cmd, proc.Identity) {
	t.Helper()
	cmd := exec.Command("sleep", "1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	id, err := proc.Read(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cmd, id
}

// reaper reaps cmd as soon as it exits (a zombie would still count as a
// member of its group) and tells whether it did within 2 s.
func reaper(cmd *exec.Cmd) func() bool {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return func() bool {
		select {
		case <-done:
			return true
		case <-time.After(2 * time.Second):
			return false
		}
	}
}

// TestScriptProtocol drives the supervisor script directly: bad lines are
// ignored without costing the good ones; unsafe or recycled targets are
// never signalled.
func TestScriptProtocol(t *testing.T) {
	kill, killID := sleeper(t)
	killed := reaper(kill)
	recycled, recycledID := sleeper(t)
	unreg, unregID := sleeper(t)
	t.Cleanup(func() {
		recycled.Process.Kill()
		unreg.Process.Kill()
		recycled.Wait()
		unreg.Wait()
	})
	p, err := startShell(300*time.Millisecond, syscall.Getpgrp(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	line := func(id string, g proc.Identity, start uint64) string {
		return fmt.Sprintf("R %s %d %d %d - -\n", id, g.PID, g.PID, start)
	}
	lines := []string{
		"garbage\n",
		"R x\n",
		"R bad;id 5 5 5 - -\n",
		"R a1 12x 1 1 - -\n",
		"X a9 1 1 1 - -\n",
		"R " + strings.Repeat("z", 300) + fmt.Sprintf(" %d %d %d - -\n", killID.PID, killID.PID, killID.StartTime),
		"R p1 1 1 0 - -\n", // pgid 1: refused
		fmt.Sprintf("R own %d %d 0 - -\n", syscall.Getpgrp(), 0), // the owner's group: refused
		"R cg 0 0 0 - /sys/fs/cgroup/../../etc\n",                // cgroup outside the base: refused
		line("ok1", killID, killID.StartTime),                    // good
		line("rec", recycledID, recycledID.StartTime+1),          // leader alive with another start time
		line("un", unregID, unregID.StartTime), "U un\n",         // unregistered
		"partial line without newline is never a registration",
	}
	for _, l := range lines {
		if err := p.Write([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	select {
	case <-p.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("supervisor did not exit after EOF")
	}
	if !killed() {
		t.Error("registered group survived EOF")
	}
	for name, c := range map[string]*exec.Cmd{"recycled-leader group": recycled, "unregistered group": unreg} {
		if err := syscall.Kill(c.Process.Pid, 0); err != nil {
			t.Errorf("%s was signalled: got %v, want alive", name, err)
		}
	}
}

func TestRegLineLength(t *testing.T) {
	r := &reg{g: Group{PGID: 12, Leader: proc.Identity{PID: 12, StartTime: 3}, Cgroup: "/" + strings.Repeat("d", 300)}}
	if _, err := regLine("s1", r); err == nil {
		t.Error("a 300-byte cgroup path: got no error, want ErrLine")
	}
	r.g.Cgroup = "/sys/fs/cgroup/hermes/u.1"
	l, err := regLine("s1", r)
	if err != nil || string(l) != "R s1 12 12 3 - /sys/fs/cgroup/hermes/u.1\n" {
		t.Errorf("regLine: got %q, %v", l, err)
	}
}
