package supervisor

import (
	"strconv"
	"strings"
)

// A mark is a tag the kernel keeps for a spawn: the soft limit of
// RLIMIT_LOCKS, a resource limit Linux has not enforced since 2.4 (it
// shows in /proc/PID/limits as "Max file locks", and nothing else reads
// it). Set on an owned spawn's leader before its program runs (pgroup
// mode, the native backend), it is inherited by every descendant across
// fork, exec, setsid and env -i, and a process title written over the
// environment (redis, nginx, postgres) leaves it: the evidence that names
// the spawn of a daemon whose parent exited and whose environment is gone.
// A process can raise or clear it (setrlimit) only by asking to; what does
// so is then found by its other evidence, or by none.
//
// The mark of a spawn key OWNERPID_OWNERSTART_SEQ is
// (OWNERSTART mod 2^13) * 2^50 + OWNERPID * 2^28 + SEQ mod 2^28: unique
// among the live owners (pids below 2^22, Linux's pid_max at most), told
// apart from a dead owner's with a recycled pid by its start time, and
// below 2^63 (RLIM_INFINITY is 2^64-1). The supervisor script computes
// the same from the keys it is given (keyed in supervisor.sh).
func markOf(key string) (uint64, bool) {
	f := strings.Split(key, "_")
	if len(f) != 3 {
		return 0, false
	}
	var n [3]uint64
	for i, s := range f {
		if len(s) > 1 && s[0] == '0' {
			return 0, false // as %d never writes it (the script would read octal)
		}
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, false
		}
		n[i] = v
	}
	pid, start, seq := n[0], n[1], n[2]
	if pid == 0 || pid >= 1<<22 {
		return 0, false
	}
	return start%(1<<13)<<50 | pid<<28 | seq%(1<<28), true
}
