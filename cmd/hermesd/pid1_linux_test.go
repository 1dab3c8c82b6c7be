package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
)

// needPIDNamespace skips the test, saying why, where this machine does
// not let it make a PID namespace with util-linux's unshare.
func needPIDNamespace(t *testing.T) {
	t.Helper()
	needsProcesses(t, "hermesd processes")
	for _, tool := range []string{"unshare", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s (util-linux) on PATH: %v", tool, err)
		}
	}
	if out, err := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "true").CombinedOutput(); err != nil {
		t.Skipf("PID namespaces are not allowed here (unshare --pid --fork --mount-proc true: %v: %s)", err, strings.TrimSpace(string(out)))
	}
}

// inNamespace lists the processes (host pids) of the PID namespace whose
// init is host pid init, with their state letter and command name.
func inNamespace(t *testing.T, init int) map[int]proc.Stat {
	t.Helper()
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", init))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]proc.Stat{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid)); err != nil || l != ns {
			continue
		}
		if st, err := proc.ReadStat(pid); err == nil {
			out[pid] = st
		}
	}
	return out
}

// orphans is sh that leaves n processes named "sleep", each orphaned at
// once (its parent subshell exits) and exiting in a moment.
func orphans(n int) string {
	return fmt.Sprintf(`i=0; while [ $i -lt %d ]; do (sleep 0.2 &); i=$((i+1)); done`, n)
}

// TestPID1 runs hermesd as the first process of a PID namespace, as a
// container runtime starts it (unshare --pid --fork --mount-proc). A unit
// leaves 100 orphaned grandchildren behind (they go to the daemon, the
// units' subreaper), and a process entering the namespace from outside
// (nsenter, as docker exec and kubectl exec do) leaves 100 more (they go
// to PID 1): all 200 exit, and no zombie is left in the namespace. Then the
// runtime's stop, SIGTERM to PID 1: every unit is stopped, and hermesd
// exits 0, the status of a clean stop, through unshare.
func TestPID1(t *testing.T) {
	needPIDNamespace(t)
	dir := t.TempDir()
	script := orphans(100) + `; echo orphaned; exec "$0"`
	testkit.WriteUnits(t, filepath.Join(dir, "units"), map[string]string{
		"web.yaml":    fmt.Sprintf("command: [/bin/sh, -c, %q, %q]\nenv: {%s: unit}\n", script, os.Args[0], roleEnv),
		"worker.yaml": unitYAML(""),
	})
	d := startDaemonWith(t, dir, daemonOpts{role: "gateway", wrap: []string{"unshare", "--pid", "--fork", "--mount-proc"}})
	kids, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", d.cmd.Process.Pid, d.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	init, err := strconv.Atoi(strings.TrimSpace(string(kids)))
	if err != nil {
		t.Fatalf("unshare's child: %q: %v", kids, err)
	}
	if ns, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", init)); err != nil || !strings.Contains(string(ns), "\nNSpid:\t"+strconv.Itoa(init)+"\t1\n") {
		t.Fatalf("hermesd (host pid %d) is not pid 1 of its namespace: %v\n%s", init, err, ns)
	}
	st := d.waitStatus("web and worker running", func(_ control.Status, u map[string]control.Unit) bool {
		return u["web"].State == control.StateRunning && u["worker"].State == control.StateRunning
	})
	if st["web"].PID == 0 {
		t.Fatalf("web has no pid: %+v", st["web"])
	}
	logPath := filepath.Join(dir, "state", "logs", "web.log")
	if !fileHas(logPath, "orphaned", reloadDeadline) {
		t.Fatalf("web did not leave its orphans; log: %s", d.logTail())
	}
	enter := exec.Command("nsenter", "--target", strconv.Itoa(init), "--pid", "--mount", "--", "/bin/sh", "-c", orphans(100))
	if out, err := enter.CombinedOutput(); err != nil {
		t.Fatalf("nsenter: %v: %s", err, out)
	}

	var left []string
	testkit.EventuallyOK(t, 30*time.Second, func() error {
		left = left[:0]
		for pid, s := range inNamespace(t, init) {
			if s.Zombie() || s.Comm == "sleep" {
				left = append(left, fmt.Sprintf("%d %c %s (ppid %d)", pid, s.State, s.Comm, s.PPID))
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("%d orphans or zombies left in the namespace: %v", len(left), left)
		}
		return nil
	})
	t.Logf("200 orphans (100 from a unit, 100 from nsenter) exited; 0 zombies in the namespace")

	leaders := map[string]proc.Identity{}
	for pid, s := range inNamespace(t, init) {
		if pid != init {
			leaders[fmt.Sprintf("%d %s", pid, s.Comm)] = testkit.Identity(t, pid)
		}
	}
	if err := syscall.Kill(init, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		if code := d.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("hermesd exited %d on SIGTERM, want 0 (a clean stop); log: %s", code, d.logTail())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("hermesd did not exit within 30 s of SIGTERM; log: %s", d.logTail())
	}
	for what, id := range leaders {
		if id.Alive() {
			t.Errorf("%s still alive after hermesd's exit", what)
		}
	}
	if log, _ := os.ReadFile(filepath.Join(dir, "hermesd.log")); !strings.Contains(string(log), "hermesd stopped") {
		t.Errorf("no clean stop in the log:\n%s", log)
	}
	t.Logf("SIGTERM to pid 1: %d processes of the namespace ended, hermesd exited %d", len(leaders), d.cmd.ProcessState.ExitCode())
}
