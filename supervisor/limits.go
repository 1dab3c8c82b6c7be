package supervisor

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/hermes-units/hermes/units"
)

// A spawn's identity and limits (Spec.Exec) are applied to the child in
// three places, all before its program runs:
//   - the user and groups by the kernel as it starts the child
//     (SysProcAttr.Credential; see identity), so that even the gate runs
//     as the unit's user;
//   - the umask by the gate script, before it execs the program;
//   - nice and the resource limits by the owner, on the child waiting at
//     the gate (setpriority, prlimit; see limit), as the mark is set.
//
// So a spawn with any of them always has a gate, in cgroup mode too
// (needsGate). The cgroup limits are written into the child's cgroup
// before it starts into it (cgroupLimits).

// needsGate reports whether e asks for what the owner sets on the child
// at the gate: the umask, nice or resource limits.
func needsGate(e units.Exec) bool {
	return e.Umask != nil || e.Nice != nil || len(e.Limits) > 0
}

// identity sets the child's user and groups (resolved now, in the user
// and group databases) and its umask (in the gate script, which gate set
// up). A user or group needs the owner to be root; one the databases do
// not know fails the spawn.
func (sp *spawning) identity() error {
	e := sp.spec.Exec
	if e.Umask != nil && sp.gateW != nil {
		sp.cmd.Args[2] = fmt.Sprintf("umask %04o && ", *e.Umask) + sp.cmd.Args[2]
	}
	cred, err := credential(e)
	if err != nil {
		return err
	}
	sp.attr.Credential = cred
	return nil
}

// credential resolves e's user, group and supplementary groups; nil when
// e sets none of them.
func credential(e units.Exec) (*syscall.Credential, error) {
	if !e.SetsIdentity() {
		return nil, nil
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("user: and group: need hermesd to run as root (it runs as uid %d); run it as root, or remove them from the unit", os.Geteuid())
	}
	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
	var u *user.User
	if e.User != "" {
		var err error
		if u, uid, gid, err = lookupUser(e.User); err != nil {
			return nil, err
		}
	}
	if e.Group != "" {
		g, err := lookupGroup(e.Group)
		if err != nil {
			return nil, err
		}
		gid = g
	}
	var groups []uint32
	switch {
	case e.Groups != nil:
		for _, name := range e.Groups {
			g, err := lookupGroup(name)
			if err != nil {
				return nil, fmt.Errorf("supplementary_groups: %w", err)
			}
			groups = append(groups, g)
		}
	case u != nil:
		// As systemd's User=: the user's groups from the group database.
		ids, err := u.GroupIds()
		if err != nil {
			return nil, fmt.Errorf("user %s: its groups: %w", e.User, err)
		}
		for _, id := range ids {
			if g, err := strconv.ParseUint(id, 10, 32); err == nil && !slices.Contains(groups, uint32(g)) {
				groups = append(groups, uint32(g))
			}
		}
	}
	// Groups empty (not nil) has the kernel drop hermesd's own.
	if groups == nil {
		groups = []uint32{}
	}
	return &syscall.Credential{Uid: uid, Gid: gid, Groups: groups}, nil
}

// lookupUser finds a user by name, else by uid; a uid the database does
// not know is taken as it is, with its number as its group.
func lookupUser(name string) (*user.User, uint32, uint32, error) {
	u, err := user.Lookup(name)
	if err != nil {
		if n, nerr := strconv.ParseUint(name, 10, 32); nerr == nil {
			if u, err = user.LookupId(name); err != nil {
				return nil, uint32(n), uint32(n), nil
			}
		}
	}
	if err != nil {
		return nil, 0, 0, fmt.Errorf("user %s: %w; create it (useradd), or fix user: in the unit", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, 0, 0, fmt.Errorf("user %s: %w", name, err)
	}
	return u, uint32(uid), uint32(gid), nil
}

// lookupGroup finds a group by name, else takes a number as a gid.
func lookupGroup(name string) (uint32, error) {
	g, err := user.LookupGroup(name)
	if err == nil {
		n, err := strconv.ParseUint(g.Gid, 10, 32)
		return uint32(n), err
	}
	if n, nerr := strconv.ParseUint(name, 10, 32); nerr == nil {
		return uint32(n), nil
	}
	return 0, fmt.Errorf("group %s: %w; create it (groupadd), or fix the unit", name, err)
}

// limit sets nice and the resource limits on the child, which waits at
// the gate.
func (sp *spawning) limit() error {
	e, pid := sp.spec.Exec, sp.cmd.Process.Pid
	if e.Nice != nil {
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, pid, *e.Nice); err != nil {
			return fmt.Errorf("nice %d: %w", *e.Nice, err)
		}
	}
	return asOwnerOf(sp.attr.Credential, func() error {
		for _, name := range units.RlimitNames {
			if rl, ok := e.Limits[name]; ok {
				if err := setRlimit(pid, name, rl); err != nil {
					return fmt.Errorf("limits.%s %s: %w", name, rl, err)
				}
			}
		}
		return nil
	})
}

// cgSetting is one cgroup file a limit writes.
type cgSetting struct {
	key, controller, file, value string
}

func cgroupSettings(c units.CgroupLimits) []cgSetting {
	var out []cgSetting
	if c.MemoryMax > 0 {
		out = append(out, cgSetting{"memory_max", "memory", "memory.max", strconv.FormatInt(int64(c.MemoryMax), 10)})
	}
	if c.CPUWeight > 0 {
		out = append(out, cgSetting{"cpu_weight", "cpu", "cpu.weight", strconv.Itoa(c.CPUWeight)})
	}
	if c.CPUMax > 0 {
		const period = 100000 // µs: the kernel's default
		out = append(out, cgSetting{"cpu_max", "cpu", "cpu.max", fmt.Sprintf("%d %d", c.CPUMax*period/100, period)})
	}
	if c.TasksMax > 0 {
		out = append(out, cgSetting{"tasks_max", "pids", "pids.max", strconv.Itoa(c.TasksMax)})
	}
	return out
}

// errNotDelegated is a controller that the parent cgroup cannot give its
// children.
var errNotDelegated = errors.New("controller not delegated")

// cgroupLimits writes the cgroup limits of spec into dir, a new cgroup
// under parent, before the child starts into it; top is the cgroup given
// to hermesd (the tree's base), parent at or below it. A limit whose
// controller top does not have (not in its cgroup.controllers: not
// delegated to hermesd) is not applied, and said through warn, naming the
// key and the controller; one the kernel refuses fails the spawn.
func cgroupLimits(top, parent, dir string, c units.CgroupLimits, warn func(format string, args ...any)) error {
	for _, s := range cgroupSettings(c) {
		if err := enableController(top, parent, s.controller); err != nil {
			warn("%s: the %s controller is not delegated to %s (%v): %s is not applied; delegate it to hermesd's cgroup (systemd: Delegate=yes), or remove %s", s.key, s.controller, top, err, s.key, s.key)
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, s.file), []byte(s.value), 0); err != nil {
			return fmt.Errorf("%s: write %s to %s: %w", s.key, s.value, filepath.Join(dir, s.file), err)
		}
	}
	return nil
}

// enableController has parent give ctrl to its children (a "+ctrl" in its
// cgroup.subtree_control), first having its own parents up to top give
// it; errNotDelegated, with what top has, when top does not have it.
func enableController(top, parent, ctrl string) error {
	if b, err := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control")); err == nil && slices.Contains(strings.Fields(string(b)), ctrl) {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(parent, "cgroup.controllers"))
	if err != nil {
		return err
	}
	if have := strings.Fields(string(b)); !slices.Contains(have, ctrl) && parent != top && strings.HasPrefix(parent, top+"/") {
		if err := enableController(top, filepath.Dir(parent), ctrl); err != nil {
			return err
		}
	} else if !slices.Contains(have, ctrl) {
		list := strings.Join(have, " ")
		if list == "" {
			list = "none"
		}
		return fmt.Errorf("%w; its cgroup.controllers holds: %s", errNotDelegated, list)
	}
	if err := os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+"+ctrl), 0); err != nil {
		return fmt.Errorf("enable it in cgroup.subtree_control: %w", err)
	}
	return nil
}
