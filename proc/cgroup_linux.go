package proc

import (
	"os"
	"strconv"
	"strings"
)

// CgroupMount returns where the cgroup v2 hierarchy is mounted, from
// /proc/self/mountinfo ("" when there is none). It is not always
// /sys/fs/cgroup: a hybrid layout mounts it at /sys/fs/cgroup/unified.
func CgroupMount() string {
	b, err := os.ReadFile(Root + "/self/mountinfo")
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		if f := strings.Fields(post); len(f) > 0 && f[0] == "cgroup2" {
			if g := strings.Fields(pre); len(g) >= 5 {
				return g[4]
			}
		}
	}
	return ""
}

// Cgroup returns pid's cgroup v2 path relative to the mount ("/a/b", from
// the "0::" line of /proc/PID/cgroup), or "" when the process is gone or
// has no v2 cgroup.
func Cgroup(pid int) string {
	b, err := os.ReadFile(Root + "/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p
		}
	}
	return ""
}
