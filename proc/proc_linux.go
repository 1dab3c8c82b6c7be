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

// Root is where procfs is mounted.
const Root = "/proc"

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
	// f[0] is field 3 (state); field N is f[N-3]. Only the first 22 are
	// read, into an array: a scan of the whole process table parses
	// thousands of these, and a slice of every field was most of what it
	// allocated.
	var f [22]string
	n := 0
	for x := range strings.FieldsSeq(string(b[end+1:])) {
		if n < len(f) {
			f[n] = x
		}
		n++
	}
	if n < 20 {
		return Stat{}, fmt.Errorf("pid %d: short stat (%d fields)", pid, n+2)
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
	if n >= 22 { // a stat line of a kernel older than 2.6 stops short of them
		cutime, err1 := strconv.ParseUint(f[13], 10, 64)
		cstime, err2 := strconv.ParseUint(f[14], 10, 64)
		pages, err3 := strconv.ParseInt(f[21], 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return Stat{}, fmt.Errorf("pid %d: cutime, cstime, rss: %w", pid, err)
		}
		s.ChildCPU, s.RSS = cutime+cstime, pages*pageSize
	}
	return s, nil
}

var pageSize = int64(os.Getpagesize())

var bootID = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile(Root + "/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
})

// BootID returns this boot's id (/proc/sys/kernel/random/boot_id).
func BootID() (string, error) { return bootID() }

// Cmdline returns the argv of pid, or ErrGone.
func Cmdline(pid int) ([]string, error) { return nulList(pid, "cmdline") }

// Environ returns the environment pid started with (KEY=VALUE entries).
// Reading another user's environment needs privileges.
func Environ(pid int) ([]string, error) { return nulList(pid, "environ") }

// nulList reads /proc/PID/name, a list of NUL-terminated strings, or
// returns ErrGone.
func nulList(pid int, name string) ([]string, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	b, err := os.ReadFile(Root + "/" + strconv.Itoa(pid) + "/" + name)
	if err != nil {
		return nil, gone(pid, err)
	}
	return splitNUL(b), nil
}

// Pids lists every pid in /proc at the moment of the call.
func Pids() ([]int, error) { return numbers(Root) }

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

// UID returns the real uid of pid, the one kill(2) checks (the first of
// the Uid: line of /proc/PID/status), or ErrGone.
func UID(pid int) (int, error) {
	if pid <= 0 {
		return 0, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	b, err := os.ReadFile(Root + "/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, gone(pid, err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "Uid:"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				return strconv.Atoi(f[0])
			}
		}
	}
	return 0, fmt.Errorf("pid %d: no Uid in status", pid)
}

// RSS returns the resident set of pid in bytes (/proc/PID/statm's second
// field, in pages). It reads with readSmall into a buffer on the stack:
// a status reads every unit's, and asked in a loop, once a second
// (reconciler's rssCache).
func RSS(pid int) (int64, error) {
	var buf [128]byte
	b, err := readSmall(Root+"/"+strconv.Itoa(pid)+"/statm", buf[:0])
	if err != nil {
		return 0, gone(pid, err)
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, fmt.Errorf("pid %d: short statm", pid)
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("pid %d: statm: %w", pid, err)
	}
	return pages * int64(os.Getpagesize()), nil
}
