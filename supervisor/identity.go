package supervisor

import (
	"fmt"
	"path/filepath"
	"syscall"

	"github.com/hermes-units/hermes/proc"
)

// Identity checks before signalling a process this owner did not spawn
// (adopted groups, re-adopted survivors): a pid alone is never trusted.

// checkLeader re-validates g's leader at the moment of Own: a recorded
// leader must still be the very process it was (same pid and start time,
// not a zombie). A group whose leader is recorded as zero is judged by its
// members alone.
func checkLeader(g Group) error {
	if g.Leader.StartTime == 0 || g.Leader.Alive() {
		return nil
	}
	if st, err := proc.ReadStat(g.Leader.PID); err == nil && !st.Zombie() && st.StartTime != g.Leader.StartTime {
		return fmt.Errorf("own group %d of %s: pid %d now belongs to another process (start time %d, recorded %d): %w",
			g.PGID, g.Unit, g.Leader.PID, st.StartTime, g.Leader.StartTime, ErrUnsafe)
	}
	return fmt.Errorf("own group %d of %s: leader %s has exited: %w", g.PGID, g.Unit, g.Leader, proc.ErrGone)
}

// foreignCgroupLocked returns g without its cgroup when that cgroup lies
// outside this owner's hermes hierarchy: a cgroup path that came from
// elsewhere (the ledger, a caller) is not trusted, and the group is then
// signalled as a process group, whose leader identity is checked.
func (o *Owner) foreignCgroupLocked(g Group) Group {
	if g.Cgroup == "" {
		return g
	}
	if _, ok := below(o.tree.baseOrEmpty(), g.Cgroup); !ok || filepath.Clean(g.Cgroup) != g.Cgroup {
		g.Cgroup = ""
	}
	return g
}

// signalMember sends sig to pid only if it is still a member of the cgroup
// dir of the hierarchy mounted at mount: the process handle (a pidfd) is
// opened first, then membership is checked, so the signal reaches the
// process that was checked even if pid is recycled meanwhile.
func signalMember(pid int, dir, mount string, sig syscall.Signal) {
	h, err := proc.OpenHandle(pid)
	if err != nil {
		return // gone
	}
	defer h.Close()
	if !inCgroup(pid, dir, mount) {
		return
	}
	h.Signal(sig)
}

// inCgroup reports whether pid's v2 cgroup is dir, in the hierarchy
// mounted at mount.
func inCgroup(pid int, dir, mount string) bool {
	rel := proc.Cgroup(pid)
	return rel != "" && mount != "" && filepath.Join(mount, rel) == filepath.Clean(dir)
}
