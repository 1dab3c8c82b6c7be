package supervisor

import (
	"os/exec"
	"syscall"
	"testing"

	"github.com/hermes-units/hermes/proc"
	"golang.org/x/sys/unix"
)

// TestAttributeToTheLauncherJustExited: a daemon whose launcher has just
// exited is re-parented to the owner before the owner's waiter hears of
// the exit. A scan in that moment must attribute the daemon (env erased,
// stdio not a log, a session of its own) to the spawn whose leader is
// gone, not to another spawn started at the same time (which was the
// fallback: the latest spawn before it).
func TestAttributeToTheLauncherJustExited(t *testing.T) {
	o, err := New(Options{Mode: ModePGroup})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	// The daemon: its own session, no environment, stdio /dev/null.
	daemon := exec.Command("env", "-i", "sleep", "1000")
	daemon.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { daemon.Process.Kill(); daemon.Wait() })
	st, err := proc.ReadStat(daemon.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	// launcher's leader has exited (not in the table), its waiter has not
	// run yet (still in leaders); other runs, started just before the
	// daemon forked.
	launcher := &reg{id: "s1", key: "k_1", g: Group{Unit: "nginx", PGID: st.PID - 2, Leader: proc.Identity{PID: st.PID - 2}}}
	other := &reg{id: "s2", key: "k_2", g: Group{Unit: "web", PGID: st.PID - 1, Leader: proc.Identity{PID: st.PID - 1}}}
	sn := &scanView{
		known:   map[int]*reg{},
		keys:    map[string]*reg{launcher.key: launcher, other.key: other},
		leaders: map[int]bool{launcher.g.Leader.PID: true, other.g.Leader.PID: true},
		spawns:  []*reg{launcher, other},
	}
	live := map[int]proc.Stat{other.g.Leader.PID: {PID: other.g.Leader.PID}, st.PID: st}
	sn.endedSince(live)
	mySID, _ := unix.Getsid(0)
	if got := o.attribute(st, sn.keys, sn.prev, sn.ended, sn.spawns, mySID); got != launcher {
		name := "none"
		if got != nil {
			name = got.g.Unit
		}
		t.Errorf("the daemon was attributed to %s, want nginx, whose launcher just exited", name)
	}
}
