package supervisor

import (
	"runtime"
	"syscall"

	"github.com/hermes-units/hermes/units"
	"golang.org/x/sys/unix"
)

// rlimits are the resources of units.RlimitNames.
var rlimits = map[string]int{
	"as": unix.RLIMIT_AS, "core": unix.RLIMIT_CORE, "cpu": unix.RLIMIT_CPU, "data": unix.RLIMIT_DATA,
	"fsize": unix.RLIMIT_FSIZE, "locks": unix.RLIMIT_LOCKS, "memlock": unix.RLIMIT_MEMLOCK,
	"msgqueue": unix.RLIMIT_MSGQUEUE, "nice": unix.RLIMIT_NICE, "nofile": unix.RLIMIT_NOFILE,
	"nproc": unix.RLIMIT_NPROC, "rss": unix.RLIMIT_RSS, "rtprio": unix.RLIMIT_RTPRIO,
	"rttime": unix.RLIMIT_RTTIME, "sigpending": unix.RLIMIT_SIGPENDING, "stack": unix.RLIMIT_STACK,
}

// setRlimit sets the limit name on pid (our child, at the gate). Raising
// a hard limit needs root (CAP_SYS_RESOURCE): EPERM otherwise.
func setRlimit(pid int, name string, rl units.Rlimit) error {
	res, ok := rlimits[name]
	if !ok {
		return unix.EINVAL
	}
	return unix.Prlimit(pid, res, &unix.Rlimit{Cur: rl.Soft, Max: rl.Hard}, nil)
}

// asOwnerOf runs f, the prlimit calls on a child that runs as cred, on a
// locked thread whose real uid and gid are cred's, its effective ids (and
// so its capabilities) left as they are. Setting another process's limits
// takes either CAP_SYS_RESOURCE or a caller whose real ids are the
// target's, and root is not always given CAP_SYS_RESOURCE (a container's
// root often is not); a raw setresuid changes the calling thread alone,
// where the Go runtime's would change them all. The thread's ids are set
// back before it is unlocked; a thread that could not be set back stays
// locked, and ends with its goroutine.
func asOwnerOf(cred *syscall.Credential, f func() error) error {
	if cred == nil {
		return f()
	}
	runtime.LockOSThread()
	ruid, rgid := uintptr(unix.Getuid()), uintptr(unix.Getgid())
	const keep = ^uintptr(0) // -1: unchanged
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(cred.Gid), keep, keep); e != 0 {
		runtime.UnlockOSThread()
		return f() // as it is: CAP_SYS_RESOURCE may do
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(cred.Uid), keep, keep); e != 0 {
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, rgid, keep, keep); e == 0 {
			runtime.UnlockOSThread()
		}
		return f()
	}
	err := f()
	_, _, e1 := unix.RawSyscall(unix.SYS_SETRESUID, ruid, keep, keep)
	_, _, e2 := unix.RawSyscall(unix.SYS_SETRESGID, rgid, keep, keep)
	if e1 == 0 && e2 == 0 {
		runtime.UnlockOSThread()
	}
	return err
}
