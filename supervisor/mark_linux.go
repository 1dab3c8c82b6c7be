package supervisor

import "golang.org/x/sys/unix"

// setMark gives pid (our child, before its program runs) the mark m as
// its RLIMIT_LOCKS soft limit, below its hard limit (unlimited unless
// someone lowered it: then the spawn is not marked).
func setMark(pid int, m uint64) error {
	var rl unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_LOCKS, nil, &rl); err != nil {
		return err
	}
	if rl.Max < m {
		return unix.EPERM
	}
	return unix.Prlimit(pid, unix.RLIMIT_LOCKS, &unix.Rlimit{Cur: m, Max: rl.Max}, nil)
}

// markOfPid is the mark pid carries (its RLIMIT_LOCKS soft limit); false
// when it cannot be read (gone, another user's).
func markOfPid(pid int) (uint64, bool) {
	var rl unix.Rlimit
	if unix.Prlimit(pid, unix.RLIMIT_LOCKS, nil, &rl) != nil {
		return 0, false
	}
	return rl.Cur, true
}
