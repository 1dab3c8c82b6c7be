package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/proc"
)

// TestScriptOddCommandNames: the script reads a leader's state and start
// time after the last ") " of its /proc/PID/stat record, whatever its
// command name holds (the kernel writes it raw, up to 15 bytes: ") ",
// fields of its own, a newline). A registered group whose leader has such
// a name dies at EOF; a group whose leader's pid carries another start time
// (a recycled pid) is spared, whatever its name. Each leader is sleep run
// through a symbolic link named as the command name should be.
func TestScriptOddCommandNames(t *testing.T) {
	sleepPath, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep on PATH")
	}
	names := []struct{ name, comm string }{
		{"plain", "sleep"},
		{"paren and fields", "x) Z 1 1 1 "},
		{"newline", "a\nb) S 9"},
		{"newline first", "\n) R 1 1 1"},
	}
	dir := t.TempDir()
	type leader struct {
		name  string
		cmd   *exec.Cmd
		id    proc.Identity
		gone  func() bool
		spare bool
	}
	var ls []leader
	for i, n := range names {
		for _, spare := range []bool{false, true} {
			link := filepath.Join(dir, fmt.Sprintf("%d%t", i, spare), n.comm)
			if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(sleepPath, link); err != nil {
				t.Fatal(err)
			}
			cmd, id := startGroup(t, exec.Command(link, "1000"))
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", id.PID)); err != nil || strings.TrimSuffix(string(b), "\n") != n.comm {
				t.Fatalf("%s: comm %q, %v; want %q", n.name, b, err, n.comm)
			}
			ls = append(ls, leader{name: n.name, cmd: cmd, id: id, gone: reaper(cmd), spare: spare})
		}
	}
	p, err := startShell(300*time.Millisecond, syscall.Getpgrp(), "", "", "proc")
	if err != nil {
		t.Fatal(err)
	}
	var lines strings.Builder
	for i, l := range ls {
		start := l.id.StartTime
		if l.spare {
			start++ // the pid names another process than the one registered
		}
		fmt.Fprintf(&lines, "R o%d %d %d %d - -\n", i, l.id.PID, l.id.PID, start)
	}
	if err := rawWrite(p, []byte(lines.String())); err != nil {
		t.Fatal(err)
	}
	if !exitedCleanly(t, p.(*shellPipe)) {
		t.Errorf("the supervisor did not exit cleanly: %v", p.(*shellPipe).status)
	}
	for _, l := range ls {
		if l.spare {
			if err := syscall.Kill(l.id.PID, 0); err != nil {
				t.Errorf("%s: the group whose leader's start time differs was signalled (%v): its id is a stranger's", l.name, err)
			}
			continue
		}
		if !l.gone() {
			t.Errorf("%s: the registered group survived EOF", l.name)
		}
	}
}
