package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hermes-units/hermes/proc"
)

// cgroup is the harness's own cgroup v2 directory: every hermesd of the run
// starts in it (it then moves itself to a "manager" leaf and creates its
// unit cgroups below, as under a delegated subtree), so that the run's
// cgroups are all below one directory the harness removes at the end.
type cgroup struct {
	dir string
	// oom says why the OOM fault is unavailable ("" when available).
	oom string
}

// newCgroup creates the harness's cgroup beside (below the parent of) its
// own, and finds out whether the memory controller can be enabled for it,
// which the OOM fault needs. It returns an error (and the harness runs
// hermesd in pgroup mode) when there is no writable hierarchy.
func newCgroup(name string) (*cgroup, error) {
	mnt := proc.CgroupMount()
	if mnt == "" {
		return nil, errors.New("no cgroup v2 hierarchy in /proc/self/mountinfo")
	}
	parent := filepath.Join(mnt, proc.Cgroup(os.Getpid()))
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	cg := &cgroup{dir: dir}
	ctl, _ := os.ReadFile(filepath.Join(parent, "cgroup.controllers"))
	if !slices.Contains(strings.Fields(string(ctl)), "memory") {
		cg.oom = fmt.Sprintf("the memory controller is not in the cgroup v2 hierarchy here (%s/cgroup.controllers: %q); memory.max cannot be set, and the OOM killer is not faked",
			parent, strings.TrimSpace(string(ctl)))
		return cg, nil
	}
	// Enable memory for the harness's cgroup and, below it, for hermesd's
	// manager leaf (where the OOM fault sets memory.max).
	if err := os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+memory"), 0); err != nil {
		cg.oom = fmt.Sprintf("cannot enable the memory controller in %s: %v", parent, err)
		return cg, nil
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory"), 0); err != nil {
		cg.oom = fmt.Sprintf("cannot enable the memory controller in %s: %v", dir, err)
	}
	return cg, nil
}

// oomKill makes the kernel's OOM killer end hermesd: memory.max of the
// manager leaf hermesd moved itself into is set below what it uses (the
// units live in other cgroups and are not candidates). It reports whether
// hermesd died within 5 s; memory.max is reset either way.
func (cg *cgroup) oomKill(d *daemon) (bool, error) {
	leaf := filepath.Join(cg.dir, "manager")
	max := filepath.Join(leaf, "memory.max")
	if err := os.WriteFile(max, []byte("4096"), 0); err != nil {
		return false, fmt.Errorf("set %s: %w", max, err)
	}
	defer os.WriteFile(max, []byte("max"), 0)
	return d.exited(5 * time.Second), nil
}

// oomEvents reads the oom_kill count of the manager leaf.
func (cg *cgroup) oomEvents() string {
	b, _ := os.ReadFile(filepath.Join(cg.dir, "manager", "memory.events"))
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			return v
		}
	}
	return "?"
}

// remove kills whatever is left in the harness's cgroup and removes it,
// deepest directories first. It polls: the kernel empties a cgroup
// asynchronously after cgroup.kill.
func (cg *cgroup) remove() error {
	os.WriteFile(filepath.Join(cg.dir, "cgroup.kill"), []byte("1"), 0)
	var dirs []string
	filepath.WalkDir(cg.dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	slices.Reverse(dirs)
	var last error
	for _, d := range dirs {
		deadline := time.Now().Add(5 * time.Second)
		for {
			last = os.Remove(d)
			if last == nil || errors.Is(last, os.ErrNotExist) || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if last != nil && !errors.Is(last, os.ErrNotExist) {
		return last
	}
	return nil
}
