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
	"sync"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/proc"
	"golang.org/x/sys/unix"
)

// ownCgroup returns the calling process's v2 cgroup path ("/..." relative to
// the mount), from the "0::" line of /proc/self/cgroup.
func ownCgroup() (string, error) {
	if p := proc.Cgroup(os.Getpid()); p != "" {
		return p, nil
	}
	return "", errors.New("no cgroup v2 line in /proc/self/cgroup")
}

// cgroupTree is an owner's subtree: one directory per owner, one leaf per
// group below it.
type cgroupTree struct {
	base  string // absolute dir under which every owner's subtree lives
	root  string // absolute dir of this owner's subtree
	mount string // the v2 hierarchy's mount point, read once at open: a stop checks every member's cgroup against it
}

// openCgroupTree finds a writable cgroup v2 hierarchy and creates the
// owner's subtree in it, named after the owner's identity. When the calling
// process sits in a cgroup other than the hierarchy's root, it first moves
// itself into the leaf "manager" below it, so that its cgroup may get
// children without breaking the no-internal-processes rule of a delegated
// subtree. It returns an error when no writable hierarchy exists.
func openCgroupTree(name string) (*cgroupTree, error) {
	if err := cgroupsAvailable(); err != nil {
		return nil, err
	}
	mnt := proc.CgroupMount()
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
	stampNamespace(root)
	if _, err := os.Stat(filepath.Join(root, "cgroup.kill")); err != nil {
		os.Remove(root)
		return nil, fmt.Errorf("cgroup %s has no cgroup.kill (kernel < 5.14?): %w", root, err)
	}
	return &cgroupTree{base: base, root: root, mount: mnt}, nil
}

// baseOrEmpty is the base of t, "" for no tree (pgroup mode).
func (t *cgroupTree) baseOrEmpty() string {
	if t == nil {
		return ""
	}
	return t.base
}

// populated reports whether a process lives in the cgroup dir or below. A
// dir that is gone is not populated.
func populated(dir string) bool {
	b, err := readCgroupFile(filepath.Join(dir, "cgroup.events"))
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
	b, err := readCgroupFile(filepath.Join(dir, "cgroup.procs"))
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

// readCgroupFile reads a cgroup interface file with plain system calls:
// os.ReadFile would also register it with the netpoller (kernfs files can
// be polled) and take it out again, four calls more for each of the groups
// a stop signals.
func readCgroupFile(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var out []byte
	buf := make([]byte, 4096)
	for {
		n, err := unix.Read(fd, buf)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return nil, err
		case n == 0:
			return out, nil
		}
		out = append(out, buf[:n]...)
	}
}

// killCgroup kills every process in dir and below (cgroup.kill).
func killCgroup(dir string) error {
	return os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
}

// keptDir is the directory, below the base, of the cgroups of Survive
// spawns: they outlive their owner's subtree.
const keptDir = "hermes-kept"

// leaf reports whether dir is a group's cgroup that an owner of this
// hierarchy created: <base>/hermes-<owner>/<unit>.<key> or
// <base>/hermes-kept/<unit>.<key>. Only such a cgroup is removed once its
// group is gone; a cgroup from elsewhere is never touched.
func (t *cgroupTree) leaf(dir string) bool {
	// A clean path has no "." or ".." component; the base's own name may
	// hold dots ("a..b") like any other byte.
	if t == nil || dir == "" || filepath.Clean(dir) != dir {
		return false
	}
	parent := filepath.Dir(dir)
	if filepath.Dir(parent) != t.base {
		return false
	}
	name := filepath.Base(parent)
	return name == keptDir || strings.HasPrefix(name, "hermes-") && ownerOf(name[len("hermes-"):]) != 0
}

// mkdirIn creates the cgroup dir in parent, creating parent first if it is
// gone: the owner's subtree (or the kept dir) may have been removed while
// nothing was in it (an owner that outlived an older version's idle
// supervisor, an administrator's cleanup); a spawn needs it again.
func mkdirIn(parent, dir string) error {
	err := os.Mkdir(dir, 0o755)
	if errors.Is(err, os.ErrNotExist) {
		if err = os.Mkdir(parent, 0o755); err == nil || errors.Is(err, os.ErrExist) {
			stampNamespace(parent)
			err = os.Mkdir(dir, 0o755)
		}
	}
	if err == nil {
		stampNamespace(dir)
	}
	return err
}

// Owners in different PID namespaces (containers that share one cgroup
// hierarchy, a test run under unshare --pid) share the names of their
// cgroups, PID_STARTTIME, but not the pids those name: an owner of
// another namespace looks dead to a sweep here. So each cgroup an owner
// creates carries its PID namespace in an extended attribute, and a sweep
// leaves those of another namespace alone. Where the attribute cannot be
// set or read (a kernel before 5.7 has no user xattrs on cgroupfs), the
// sweep does as before.
const nsAttr = "user.hermes.pidns"

// ownNamespace is this process's PID namespace ("pid:[4026531836]"), ""
// when it cannot be read.
var ownNamespace = sync.OnceValue(func() string {
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return ns
})

// stampNamespace marks the cgroup dir as created in this PID namespace.
func stampNamespace(dir string) {
	if ns := ownNamespace(); ns != "" {
		_ = unix.Setxattr(dir, nsAttr, []byte(ns), 0)
	}
}

// otherNamespace reports whether the cgroup dir was created in a PID
// namespace other than this process's.
func otherNamespace(dir string) bool {
	buf := make([]byte, 64)
	n, err := unix.Getxattr(dir, nsAttr, buf)
	return err == nil && ownNamespace() != "" && string(buf[:n]) != ownNamespace()
}

// removeEmpty removes the cgroup dir if no process lives in it: the kernel
// refuses to remove a populated cgroup (rmdir fails with EBUSY), so one
// rmdir(2) is the whole of it, where a look at cgroup.events first and
// os.Remove (which tries unlink before rmdir) took five system calls. It
// reports whether dir is gone.
func removeEmpty(dir string) bool {
	err := syscall.Rmdir(dir)
	return err == nil || errors.Is(err, syscall.ENOENT)
}

// removeTree removes dir and the cgroups below it, deepest first, leaving
// every one that holds a process (and so its ancestors).
func removeTree(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	for _, e := range ents {
		if e.IsDir() {
			removeTree(filepath.Join(dir, e.Name()))
		}
	}
	return removeEmpty(dir)
}

// removeWhenEmpty removes dir once the processes just killed in it have
// left (they leave as they exit, a moment after cgroup.kill), waiting at
// most bound. The kernel gives no event short of watching cgroup.events,
// so it polls.
func removeWhenEmpty(dir string, bound time.Duration) bool {
	end := time.Now().Add(bound)
	for !removeEmpty(dir) {
		if time.Now().After(end) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// ownerOf parses an owner's name, PID_STARTTIME (the end of a subtree's
// name, or the start of a spawn key, PID_STARTTIME_N), and returns its
// pid, 0 when s is not one.
func ownerOf(s string) (pid int) {
	p, st, ok := strings.Cut(s, "_")
	if !ok {
		return 0
	}
	st, _, _ = strings.Cut(st, "_") // a spawn key goes on with _N
	n, err := strconv.Atoi(p)
	if _, err2 := strconv.ParseUint(st, 10, 64); err != nil || err2 != nil || n <= 0 {
		return 0
	}
	return n
}

// ownerAlive reports whether the owner named PID_STARTTIME[_…] still runs
// (same pid and start time, not a zombie).
func ownerAlive(s string) bool {
	p, st, _ := strings.Cut(s, "_")
	st, _, _ = strings.Cut(st, "_")
	pid, _ := strconv.Atoi(p)
	start, _ := strconv.ParseUint(st, 10, 64)
	return proc.Identity{PID: pid, StartTime: start}.Alive()
}

// sweep removes what dead owners left in the hierarchy: their subtrees
// (hermes-PID_STARTTIME) and their kept cgroups (hermes-kept/UNIT.KEY),
// each only where no process lives. A live owner's cgroups are never
// touched, even empty ones (one may be about to start a child in it), nor
// is the calling owner's own subtree. Called by New.
func (t *cgroupTree) sweep(logf func(string, ...any)) {
	ents, err := os.ReadDir(t.base)
	if err != nil {
		return
	}
	n := 0
	for _, e := range ents {
		name, dir := e.Name(), filepath.Join(t.base, e.Name())
		if !e.IsDir() || dir == t.root {
			continue
		}
		if name == keptDir {
			kept, _ := os.ReadDir(dir)
			for _, k := range kept {
				_, key, ok := cutLast(k.Name(), ".")
				kdir := filepath.Join(dir, k.Name())
				if k.IsDir() && ok && ownerOf(key) != 0 && !otherNamespace(kdir) && !ownerAlive(key) && removeTree(kdir) {
					n++
				}
			}
			continue
		}
		owner, ok := strings.CutPrefix(name, "hermes-")
		if ok && ownerOf(owner) != 0 && !otherNamespace(dir) && !ownerAlive(owner) && removeTree(dir) {
			n++
		}
	}
	if n > 0 {
		logf("supervisor: removed %d empty cgroups of owners that are gone", n)
	}
}

// cutLast is strings.Cut at the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}
