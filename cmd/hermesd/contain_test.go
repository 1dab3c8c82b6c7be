package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
	"golang.org/x/sys/unix"
)

// TestCheckShell: an image without the supervisor's sh is refused at
// start with an error naming the path looked for and what to do.
func TestCheckShell(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		ok         bool
	}{
		{"the real one", supervisor.Shell, true},
		{"missing", filepath.Join(dir, "bin", "sh"), false},
		{"a directory", dir, false},
		{"not executable", plain, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkShell(tt.path)
			if tt.ok {
				if err != nil {
					t.Errorf("checkShell(%s) = %v, want nil", tt.path, err)
				}
				return
			}
			if !errors.Is(err, errNoShell) || !strings.Contains(err.Error(), tt.path+":") || !strings.Contains(err.Error(), "use an image that has one") {
				t.Errorf("checkShell(%s) = %v; want errNoShell naming the path and what to do", tt.path, err)
			}
		})
	}
}

// TestPgroupAdvice: in a mount namespace where the cgroup v2 hierarchy is
// mounted read-only (a container runtime's default), hermesd runs in
// pgroup mode and says so once at start, with what gives cgroup mode.
func TestPgroupAdvice(t *testing.T) {
	needsProcesses(t, "hermesd processes")
	mnt := proc.CgroupMount()
	if mnt == "" || unix.Access(mnt, unix.W_OK) != nil {
		t.Skipf("no writable cgroup v2 hierarchy (mount %q) to make read-only: hermesd is in pgroup mode here anyway", mnt)
	}
	if out, err := exec.Command("unshare", "--mount", "--propagation", "private", "mount", "-o", "remount,bind,ro", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot remount %s read-only in a mount namespace (unshare --mount: %v: %s)", mnt, err, strings.TrimSpace(string(out)))
	}
	dir := t.TempDir()
	writeUnits(t, dir, map[string]string{"web": "owned"})
	d := startDaemonWith(t, dir, daemonOpts{role: "gateway", wrap: []string{"unshare", "--mount", "--propagation", "private",
		"/bin/sh", "-c", `mount -o remount,bind,ro "$1" && shift && exec "$@"`, "sh", mnt}})
	st := d.fullStatus()
	if st.Supervisor.Mode != "pgroup" {
		t.Errorf("mode %q with %s read-only, want pgroup", st.Supervisor.Mode, mnt)
	}
	d.waitStatus("web running", func(_ control.Status, u map[string]control.Unit) bool { return u["web"].State == control.StateRunning })
	log, _ := os.ReadFile(filepath.Join(dir, "hermesd.log"))
	if n := strings.Count(string(log), "containment: pgroup mode"); n != 1 {
		t.Errorf("the pgroup advice is in the log %d times, want once:\n%s", n, log)
	}
	if !strings.Contains(string(log), "--cgroupns=private") {
		t.Errorf("the advice does not say what gives cgroup mode:\n%s", log)
	}
}
