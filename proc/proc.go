// Package proc is hermes's platform layer for processes: what the kernel
// says about a process (its identity, state, parent, group and session, its
// command line and environment), the process table and the members of a
// process group, a handle that signals one process and never another, and
// a file that tells when a process exits. Nothing above it reads /proc or
// calls a process system call that only one kernel has. (The other
// platform-specific concepts live, split by build tags, in the package that
// owns each: peer credentials in control, file locks in ledger, sender
// credentials in internal/notify, file events in internal/watch.)
//
// On Linux everything comes from /proc and pidfds. On darwin the process
// table is sysctl's (kern.proc.pid, kern.proc.all, kern.procargs2), process
// handles check the start time before kill(2), and exits are watched with
// kqueue. Elsewhere (FreeBSD) the package builds, and what it cannot do
// returns an error that errors.Is(err, errors.ErrUnsupported) matches:
// never a silent no-op.
//
// A pid alone is never trusted: pids are recycled. Identity pairs the pid
// with the kernel's start time of the process and the boot id, so a process
// that died and whose pid was reused never matches.
package proc

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

// ErrGone reports that no process with that pid exists (any more).
var ErrGone = errors.New("process is gone")

// UnsupportedError reports that this platform cannot do What; Why says
// what it lacks. It matches errors.ErrUnsupported.
type UnsupportedError struct {
	What string // what was asked: "the process table", "pidfds", ...
	Why  string // what the platform lacks, or what to use instead
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("%s: not available on %s: %s", e.What, runtime.GOOS, e.Why)
}

// Is makes errors.Is(err, errors.ErrUnsupported) true.
func (e *UnsupportedError) Is(target error) bool { return target == errors.ErrUnsupported }

// Identity names one process for its whole life and never another.
type Identity struct {
	PID int `json:"pid"`
	// StartTime is the kernel's start time of the process, in the
	// platform's unit: clock ticks since boot on Linux (/proc/PID/stat
	// field 22), microseconds since the epoch on darwin (kinfo_proc's
	// p_starttime). It is compared, never converted, except by Age.
	StartTime uint64 `json:"start_time"`
	BootID    string `json:"boot_id"`
}

// String formats the identity as pid@starttime for logs and protocol lines.
func (id Identity) String() string {
	return fmt.Sprintf("%d@%d", id.PID, id.StartTime)
}

// IsZero reports whether the identity was never set.
func (id Identity) IsZero() bool { return id.PID == 0 }

// Stat is what the project uses of a process table entry (on Linux,
// /proc/PID/stat).
type Stat struct {
	PID       int
	Comm      string
	State     byte // R, S, D, Z, T, ...
	PPID      int
	PGID      int
	SID       int
	StartTime uint64 // as in Identity
	CPU       uint64 // user + system time in clock ticks (fields 14 and 15); 0 where the platform's table has none (darwin)
	// ChildCPU is the user + system time, in clock ticks, of the children
	// this process has waited for (fields 16 and 17); RSS its resident
	// set in bytes (field 24, in pages). 0 where the platform's table has
	// none (darwin).
	ChildCPU uint64
	RSS      int64
}

// Zombie reports whether the process has exited and waits to be reaped.
func (s Stat) Zombie() bool { return s.State == 'Z' || s.State == 'X' }

// Read returns the identity of the live process pid.
func Read(pid int) (Identity, error) {
	st, err := ReadStat(pid)
	if err != nil {
		return Identity{}, err
	}
	boot, err := BootID()
	if err != nil {
		return Identity{}, err
	}
	return Identity{PID: pid, StartTime: st.StartTime, BootID: boot}, nil
}

// Self returns the identity of the calling process.
func Self() (Identity, error) { return Read(os.Getpid()) }

// Alive reports whether the process named by id still runs: same pid, same
// start time, same boot, and not a zombie. A recycled pid is not alive.
func (id Identity) Alive() bool {
	if id.PID <= 0 {
		return false
	}
	st, err := ReadStat(id.PID)
	if err != nil || st.Zombie() || st.StartTime != id.StartTime {
		return false
	}
	boot, err := BootID()
	return err == nil && (id.BootID == "" || id.BootID == boot)
}

// GroupMembers lists the live (non-zombie) processes whose process group is
// pgid. An empty result means the group is gone. A pgid ≤ 0 names no group
// (kernel threads report pgid 0) and has no members.
func GroupMembers(pgid int) ([]int, error) {
	if pgid <= 0 {
		return nil, nil
	}
	return Find(func(s Stat) bool { return s.PGID == pgid })
}
