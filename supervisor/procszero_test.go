package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestScriptCgroupProcsZero: a cgroup whose members are exiting may read
// as pid 0 in cgroup.procs. The script must not send its signal to "0"
// (its own process group: it would kill itself halfway through the
// members, and the rest would survive the owner). The cgroup here is a
// directory that stands in for one: populated, listing 0 before a real
// member.
func TestScriptCgroupProcsZero(t *testing.T) {
	member, _ := sleeper(t)
	gone := reaper(member)
	base := t.TempDir()
	cg := filepath.Join(base, "u")
	if err := os.Mkdir(cg, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"cgroup.events": "populated 1\nfrozen 0\n",
		"cgroup.procs":  fmt.Sprintf("0\n%d\n", member.Process.Pid),
	} {
		if err := os.WriteFile(filepath.Join(cg, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p, err := startShell(200*time.Millisecond, syscall.Getpgrp(), base, "-", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := rawWrite(p, []byte("R c1 0 0 0 - u\n")); err != nil {
		t.Fatal(err)
	}
	if !exitedCleanly(t, p.(*shellPipe)) {
		t.Errorf("the supervisor did not exit cleanly (%v): it signalled its own group", p.(*shellPipe).status)
	}
	if !gone() {
		t.Errorf("the cgroup's member %d was not signalled after the 0 before it", member.Process.Pid)
	}
}
