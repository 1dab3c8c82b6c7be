package supervisor

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// cgroupMount returns the mount point of the cgroup v2 hierarchy from
// /proc/self/mountinfo ("" when there is none). It is not always
// /sys/fs/cgroup: hybrid layouts mount it at /sys/fs/cgroup/unified.
func cgroupMount() string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		if f := strings.Fields(post); len(f) > 0 && f[0] == "cgroup2" {
			if g := strings.Fields(pre); len(g) >= 5 {
				return g[4]
			}
		}
	}
	return ""
}

// ownCgroup returns the calling process's v2 cgroup path ("/..." relative to
// the mount), from the "0::" line of /proc/self/cgroup.
func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p, nil
		}
	}
	return "", errors.New("no cgroup v2 line in /proc/self/cgroup")
}

// cgroupTree is an owner's subtree: one directory per owner, one leaf per
// group below it.
type cgroupTree struct {
	base string // absolute dir under which every owner's subtree lives
	root string // absolute dir of this owner's subtree
}

// openCgroupTree finds a writable cgroup v2 hierarchy and creates the
// owner's subtree in it, named after the owner's identity. When the calling
// process sits in a cgroup other than the hierarchy's root, it first moves
// itself into the leaf "manager" below it, so that its cgroup may get
// children without breaking the no-internal-processes rule of a delegated
// subtree. It returns an error when no writable hierarchy exists.
func openCgroupTree(name string) (*cgroupTree, error) {
	mnt := cgroupMount()
	if mnt == "" {
		return nil, errors.New("no cgroup v2 hierarchy in /proc/self/mountinfo")
	}
	own, err := ownCgroup()
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(own, " (deleted)") {
		return nil, fmt.Errorf("own cgroup %q was deleted", own)
	}
	base := filepath.Join(mnt, own)
	if unix.Access(base, unix.W_OK) != nil {
		return nil, fmt.Errorf("cgroup %s is not writable", base)
	}
	if own != "/" && filepath.Base(own) != "manager" {
		leaf := filepath.Join(base, "manager")
		if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("create manager leaf: %w", err)
		}
		if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
			return nil, fmt.Errorf("move into manager leaf %s: %w", leaf, err)
		}
	} else if own != "/" {
		base = filepath.Dir(base)
	}
	root := filepath.Join(base, name)
	if err := os.Mkdir(root, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("create owner cgroup %s: %w", root, err)
	}
	if _, err := os.Stat(filepath.Join(root, "cgroup.kill")); err != nil {
		os.Remove(root)
		return nil, fmt.Errorf("cgroup %s has no cgroup.kill (kernel < 5.14?): %w", root, err)
	}
	return &cgroupTree{base: base, root: root}, nil
}

// populated reports whether a process lives in the cgroup dir or below. A
// dir that is gone is not populated.
func populated(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("populated ")); ok {
			return string(v) == "1"
		}
	}
	return false
}

// cgroupProcs lists the pids in the cgroup dir itself.
func cgroupProcs(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// killCgroup kills every process in dir and below (cgroup.kill).
func killCgroup(dir string) error {
	return os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
}
