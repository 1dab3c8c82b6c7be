package proc

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// The process table on darwin: sysctl's kern.proc.pid (one process),
// kern.proc.all (every process, in one call) and kern.procargs2 (a
// process's argv and environment). The start time is p_starttime in
// microseconds since the epoch; CPU time is not in the table (0).

// statOf is the part of a kinfo_proc Stat speaks. SID is not in it (the
// session is a kernel pointer there): it is asked with getsid(2), 0 when
// the kernel refuses.
func statOf(k *unix.KinfoProc) Stat {
	st := Stat{
		PID:       int(k.Proc.P_pid),
		Comm:      unix.ByteSliceToString(k.Proc.P_comm[:]),
		State:     stateLetter(k.Proc.P_stat),
		PPID:      int(k.Eproc.Ppid),
		PGID:      int(k.Eproc.Pgid),
		StartTime: micros(k.Proc.P_starttime.Sec, int64(k.Proc.P_starttime.Usec)),
	}
	if sid, err := unix.Getsid(st.PID); err == nil {
		st.SID = sid
	}
	return st
}

// ReadStat reads pid's entry of the process table (sysctl kern.proc.pid).
// It returns an error wrapping ErrGone when the process does not exist.
func ReadStat(pid int) (Stat, error) {
	k, err := kinfo(pid)
	if err != nil {
		return Stat{}, err
	}
	return statOf(k), nil
}

// kinfo reads pid's kinfo_proc (sysctl kern.proc.pid), or ErrGone.
func kinfo(pid int) (*unix.KinfoProc, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	// For a pid with no process the kernel answers with no record, which
	// SysctlKinfoProc reports as EIO.
	if errors.Is(err, unix.EIO) || errors.Is(err, unix.ESRCH) || err == nil && int(k.Proc.P_pid) != pid {
		return nil, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	if err != nil {
		return nil, fmt.Errorf("pid %d: sysctl kern.proc.pid: %w", pid, err)
	}
	return k, nil
}

var bootID = sync.OnceValues(func() (string, error) {
	id, err := unix.Sysctl("kern.bootsessionuuid")
	if err != nil {
		return "", fmt.Errorf("sysctl kern.bootsessionuuid: %w", err)
	}
	return id, nil
})

// BootID returns this boot's id (sysctl kern.bootsessionuuid).
func BootID() (string, error) { return bootID() }

// procArgs reads and splits pid's kern.procargs2. The kernel refuses
// another user's process (EINVAL, as for a zombie): a pid with no process
// is ErrGone, any other refusal wraps the kernel's error.
func procArgs(pid int) (argv, env []string, err error) {
	if pid <= 0 {
		return nil, nil, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	b, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil {
		if _, serr := ReadStat(pid); errors.Is(serr, ErrGone) {
			return nil, nil, serr
		}
		return nil, nil, fmt.Errorf("pid %d: sysctl kern.procargs2: %w", pid, err)
	}
	argv, env, err = parseProcArgs(b)
	if err != nil {
		return nil, nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	return argv, env, nil
}

// Cmdline returns the argv of pid, or ErrGone.
func Cmdline(pid int) ([]string, error) {
	argv, _, err := procArgs(pid)
	if len(argv) == 0 {
		argv = nil
	}
	return argv, err
}

// Environ returns the environment pid started with (KEY=VALUE entries).
// Reading another user's process needs privileges.
func Environ(pid int) ([]string, error) {
	_, env, err := procArgs(pid)
	return env, err
}

// table is every entry of the process table (sysctl kern.proc.all).
func table() ([]unix.KinfoProc, error) {
	ks, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, fmt.Errorf("sysctl kern.proc.all: %w", err)
	}
	return ks, nil
}

// Pids lists every pid in the process table at the moment of the call.
func Pids() ([]int, error) {
	ks, err := table()
	if err != nil {
		return nil, err
	}
	pids := make([]int, 0, len(ks))
	for i := range ks {
		if pid := int(ks[i].Proc.P_pid); pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// Find lists the live (non-zombie) processes whose stat satisfies keep,
// from one read of the whole table.
func Find(keep func(Stat) bool) ([]int, error) {
	ks, err := table()
	if err != nil {
		return nil, err
	}
	var out []int
	for i := range ks {
		if ks[i].Proc.P_pid <= 0 {
			continue
		}
		st := statOf(&ks[i])
		if st.Zombie() {
			continue
		}
		if keep(st) {
			out = append(out, st.PID)
		}
	}
	return out, nil
}

// UID returns the real uid of pid (kinfo_proc's p_ruid), the one kill(2)
// checks, or ErrGone.
func UID(pid int) (int, error) {
	k, err := kinfo(pid)
	if err != nil {
		return 0, err
	}
	return int(k.Eproc.Pcred.P_ruid), nil
}

// RSS is unsupported: the resident set is not in darwin's process table
// (it is proc_pidinfo's, which x/sys/unix does not wrap).
func RSS(int) (int64, error) {
	return 0, &UnsupportedError{What: "a process's resident set", Why: "it is not in the sysctl process table"}
}
