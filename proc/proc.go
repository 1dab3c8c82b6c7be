// Package proc reads what the kernel says about processes under /proc: a
// process's identity (pid, start time, boot id), its group and session, its
// command line and environment, and the members of a process group.
//
// A pid alone is never trusted: pids are recycled. Identity pairs the pid with
// the start time from /proc/PID/stat (field 22, clock ticks since boot) and
// the boot id, so a process that died and whose pid was reused never matches.
package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// ErrGone reports that no process with that pid exists (any more).
var ErrGone = errors.New("process is gone")

// Root is where procfs is mounted.
const Root = "/proc"

// Identity names one process for its whole life and never another.
type Identity struct {
	PID       int    `json:"pid"`
	StartTime uint64 `json:"start_time"` // clock ticks since boot, /proc/PID/stat field 22
	BootID    string `json:"boot_id"`
}

// String formats the identity as pid@starttime for logs and protocol lines.
func (id Identity) String() string {
	return fmt.Sprintf("%d@%d", id.PID, id.StartTime)
}

// IsZero reports whether the identity was never set.
func (id Identity) IsZero() bool { return id.PID == 0 }

// Stat is the part of /proc/PID/stat the project uses.
type Stat struct {
	PID       int
	Comm      string
	State     byte // R, S, D, Z, T, ...
	PPID      int
	PGID      int
	SID       int
	StartTime uint64
	CPU       uint64 // user + system time in clock ticks (fields 14 and 15)
}

// Zombie reports whether the process has exited and waits to be reaped.
func (s Stat) Zombie() bool { return s.State == 'Z' || s.State == 'X' }

// ReadStat parses /proc/PID/stat. It returns an error wrapping ErrGone when
// the process does not exist.
func ReadStat(pid int) (Stat, error) {
	if pid <= 0 {
		return Stat{}, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	var buf [1024]byte
	b, err := readSmall(Root+"/"+strconv.Itoa(pid)+"/stat", buf[:0])
	if err != nil {
		return Stat{}, gone(pid, err)
	}
	return parseStat(pid, b)
}

// readSmall appends the content of a small /proc file to buf with three
// system calls (open, read until EOF, close). os.ReadFile also stats the
// file and tries to register it with the poller, which doubles the cost of
// the per-process reads that pruning and scans make by the hundred.
func readSmall(path string, buf []byte) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	for err == syscall.EINTR {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// gone maps the errors of reading /proc/PID/... for a process that does not
// exist, or exited between open and read (ESRCH), to ErrGone.
func gone(pid int, err error) error {
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	return err
}

// parseStat parses the content of a stat file. The command name may hold
// spaces and parentheses, so fields are counted from the last ')'.
func parseStat(pid int, b []byte) (Stat, error) {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return Stat{}, fmt.Errorf("pid %d: malformed stat", pid)
	}
	s := Stat{PID: pid, Comm: string(b[open+1 : end])}
	f := strings.Fields(string(b[end+1:]))
	// f[0] is field 3 (state); field N is f[N-3].
	if len(f) < 20 {
		return Stat{}, fmt.Errorf("pid %d: short stat (%d fields)", pid, len(f)+2)
	}
	s.State = f[0][0]
	var err error
	if s.PPID, err = strconv.Atoi(f[1]); err != nil {
		return Stat{}, fmt.Errorf("pid %d: ppid: %w", pid, err)
	}
	if s.PGID, err = strconv.Atoi(f[2]); err != nil {
		return Stat{}, fmt.Errorf("pid %d: pgid: %w", pid, err)
	}
	if s.SID, err = strconv.Atoi(f[3]); err != nil {
		return Stat{}, fmt.Errorf("pid %d: sid: %w", pid, err)
	}
	if s.StartTime, err = strconv.ParseUint(f[19], 10, 64); err != nil {
		return Stat{}, fmt.Errorf("pid %d: starttime: %w", pid, err)
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return Stat{}, fmt.Errorf("pid %d: utime, stime: %w", pid, err)
	}
	s.CPU = utime + stime
	return s, nil
}

var bootID = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile(Root + "/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
})

// BootID returns this boot's id (/proc/sys/kernel/random/boot_id).
func BootID() (string, error) { return bootID() }

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

// Cmdline returns the argv of pid, or ErrGone.
func Cmdline(pid int) ([]string, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	b, err := os.ReadFile(Root + "/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return nil, gone(pid, err)
	}
	return splitNUL(b), nil
}

// Environ returns the environment pid started with (KEY=VALUE entries).
// Reading another user's environment needs privileges.
func Environ(pid int) ([]string, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	b, err := os.ReadFile(Root + "/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return nil, gone(pid, err)
	}
	return splitNUL(b), nil
}

// splitNUL splits a NUL-terminated list (/proc/PID/cmdline, environ). Only
// the final terminator is dropped, so an empty last argument survives.
func splitNUL(b []byte) []string {
	b = bytes.TrimSuffix(b, []byte{0})
	if len(b) == 0 {
		return nil
	}
	parts := bytes.Split(b, []byte{0})
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = string(p)
	}
	return out
}

// Pids lists every pid in /proc at the moment of the call.
func Pids() ([]int, error) {
	ents, err := os.ReadDir(Root)
	if err != nil {
		return nil, err
	}
	pids := make([]int, 0, len(ents))
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
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

// Find lists the live (non-zombie) processes whose stat satisfies keep.
// Processes that vanish during the scan are skipped.
func Find(keep func(Stat) bool) ([]int, error) {
	pids, err := Pids()
	if err != nil {
		return nil, err
	}
	var out []int
	for _, pid := range pids {
		st, err := ReadStat(pid)
		if err != nil || st.Zombie() {
			continue
		}
		if keep(st) {
			out = append(out, pid)
		}
	}
	return out, nil
}
