package supervisor

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

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
// when it cannot be read (gone). prlimit is refused for another user's
// process without CAP_SYS_RESOURCE: its /proc/PID/limits, which anyone
// may read, says the same.
func markOfPid(pid int) (uint64, bool) {
	var rl unix.Rlimit
	if unix.Prlimit(pid, unix.RLIMIT_LOCKS, nil, &rl) == nil {
		return rl.Cur, true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/limits")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "Max file locks"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 && f[0] == "unlimited" {
				return unix.RLIM_INFINITY, true
			}
			if len(f) == 0 {
				return 0, false
			}
			m, err := strconv.ParseUint(f[0], 10, 64)
			return m, err == nil
		}
	}
	return 0, false
}
