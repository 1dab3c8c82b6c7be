package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestSnapshotGroup: a group's use is the sum over its members, each read
// once: a shell and its background cat; the shell's CPU counts the busy
// subshell it waited for, which has exited.
func TestSnapshotGroup(t *testing.T) {
	cmd := exec.Command("sh", "-c", `exec 3<&0; cat <&3 >/dev/null & (i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done); echo ready; wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	startReady(t, cmd, "shell")
	pgid := cmd.Process.Pid
	var members []int
	var err error
	for deadline := time.Now().Add(10 * time.Second); len(members) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("group %d has members %v, want the shell and cat", pgid, members)
		}
		if members, err = GroupMembers(pgid); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := ReadSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	got := snap.Group(pgid)
	var want Usage
	for _, pid := range members {
		st, err := ReadStat(pid)
		if err != nil {
			t.Fatal(err)
		}
		want.Memory += st.RSS
	}
	leader, err := ReadStat(pgid)
	if err != nil {
		t.Fatal(err)
	}
	// Resident sets move a little between reads: within a page a member.
	if d := got.Memory - want.Memory; d < -int64(len(members))*pageSize || d > int64(len(members))*pageSize {
		t.Errorf("group memory %d, want the members' sum %d (%v)", got.Memory, want.Memory, members)
	}
	if got.Memory <= leader.RSS {
		t.Errorf("group memory %d, want more than the leader's alone (%d)", got.Memory, leader.RSS)
	}
	if leader.ChildCPU == 0 {
		t.Skip("the busy subshell took less than a clock tick: no CPU to count")
	}
	if got.CPU < ticks(leader.ChildCPU) {
		t.Errorf("group CPU %s, want at least the waited-for subshell's %s", got.CPU, ticks(leader.ChildCPU))
	}
	if pg, ok := snap.PGID(members[len(members)-1]); !ok || pg != pgid {
		t.Errorf("PGID(%d) = %d, %v; want %d, true", members[len(members)-1], pg, ok, pgid)
	}
	if u := snap.Processes(members); u != got {
		t.Errorf("Processes(%v) = %+v, want the group's %+v", members, u, got)
	}
}

// TestCgroupUsage reads a stand-in cgroup directory (the files the kernel
// writes): with the memory controller, and without it (this machine's
// hybrid hierarchy has none), where memory is false.
func TestCgroupUsage(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("cpu.stat", "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n")
	write("cgroup.procs", "12\n34\n")
	u, mem, err := CgroupUsage(dir)
	if err != nil || mem || u != (Usage{CPU: 2500 * time.Millisecond}) {
		t.Errorf("no memory controller: CgroupUsage = %+v, %v, %v; want CPU 2.5s, false, nil", u, mem, err)
	}
	write("memory.current", "73400320\n")
	u, mem, err = CgroupUsage(dir)
	if err != nil || !mem || u != (Usage{Memory: 73400320, CPU: 2500 * time.Millisecond}) {
		t.Errorf("memory controller: CgroupUsage = %+v, %v, %v; want 73400320 bytes, 2.5s, true, nil", u, mem, err)
	}
	if pids, err := CgroupProcs(dir); err != nil || len(pids) != 2 || pids[0] != 12 || pids[1] != 34 {
		t.Errorf("CgroupProcs = %v, %v; want [12 34]", pids, err)
	}
	if _, _, err := CgroupUsage(filepath.Join(dir, "gone")); err == nil {
		t.Error("CgroupUsage of a missing cgroup: no error")
	}
}
