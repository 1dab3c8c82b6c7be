//go:build linux

package proc

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCgroup checks the two readers against each other: where a v2
// hierarchy is mounted, the calling process's cgroup is a directory of it
// that lists the process in cgroup.procs.
func TestCgroup(t *testing.T) {
	mount := CgroupMount()
	if mount == "" {
		t.Skip("no cgroup v2 hierarchy on this machine (none in /proc/self/mountinfo)")
	}
	own := Cgroup(os.Getpid())
	if own == "" || own[0] != '/' {
		t.Fatalf("Cgroup(self) = %q, want a path starting with /", own)
	}
	procs, err := os.ReadFile(filepath.Join(mount, own, "cgroup.procs"))
	if err != nil {
		t.Fatalf("read cgroup.procs of %s: %v", own, err)
	}
	if !containsLine(string(procs), os.Getpid()) {
		t.Errorf("%s/cgroup.procs does not list pid %d", filepath.Join(mount, own), os.Getpid())
	}
	if got := Cgroup(1 << 30); got != "" {
		t.Errorf("Cgroup of a pid that does not exist = %q, want \"\"", got)
	}
}

func containsLine(s string, pid int) bool {
	for _, l := range strings.Fields(s) {
		if l == strconv.Itoa(pid) {
			return true
		}
	}
	return false
}
