package supervisor

import (
	"fmt"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
)

// zombieGroup starts `sleep` leading its own group and never reaps it until
// the test ends: once killed, its group holds only a zombie, as the groups
// of a dead owner do where init does not reap orphans. kill(-pgid, 0) still
// succeeds on such a group.
func zombieGroup(t *testing.T) (Group, *exec.Cmd) {
	t.Helper()
	return sleepGroup(t, "zombie")
}

// waitZombie waits until pid is a zombie (the kernel gives no event for
// that to a parent that does not wait).
func waitZombie(t *testing.T, pid int) {
	t.Helper()
	if !testkit.Within(10*time.Second, func() bool { st, err := proc.ReadStat(pid); return err == nil && st.Zombie() }) {
		t.Fatalf("pid %d did not become a zombie", pid)
	}
}

// TestZombieIsGone: a group whose only member is a zombie is empty, for the
// sh supervisor at EOF (it exits without waiting out its grace) and for the
// owner (Empty, and Stop that does not wait out its grace).
func TestZombieIsGone(t *testing.T) {
	const grace = time.Hour // waiting it out would time the test out
	t.Run("script", func(t *testing.T) {
		g, cmd := zombieGroup(t)
		g2, cmd2 := zombieGroup(t)
		p, err := startShell(grace, syscall.Getpgrp(), "", "", "")
		if err != nil {
			t.Fatal(err)
		}
		var lines string
		for i, x := range []Group{g, g2} {
			lines += fmt.Sprintf("R z%d %d %d %d - -\n", i, x.PGID, x.Leader.PID, x.Leader.StartTime)
		}
		if err := rawWrite(p, []byte(lines)); err != nil {
			t.Fatal(err)
		}
		p.Close()
		waitZombie(t, cmd.Process.Pid)
		waitZombie(t, cmd2.Process.Pid)
		exitWithin(t, p, 30*time.Second, "the supervisor still waits with only zombies left in its groups (grace %v)", grace)
		if err := syscall.Kill(-g.PGID, 0); err != nil {
			t.Fatalf("kill(-%d, 0) after the TERM: %v; want success (a zombie is left)", g.PGID, err)
		}
	})
	t.Run("owner", func(t *testing.T) {
		o := newTestOwner(t, Options{Mode: ModePGroup})
		defer o.Close()
		g, cmd := zombieGroup(t)
		if o.Empty(g) {
			t.Fatalf("Empty(live group %d) = true, want false", g.PGID)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		waitZombie(t, cmd.Process.Pid)
		if !o.Empty(g) {
			t.Errorf("Empty(group %d holding a zombie only) = false, want true", g.PGID)
		}
		g2, cmd2 := zombieGroup(t)
		done := make(chan error, 1)
		go func() { done <- o.Stop(t.Context(), g2, syscall.SIGTERM, grace) }()
		if err := testkit.Receive(t, 30*time.Second, done, "Stop still waits with only a zombie left in group %d (grace %v)", g2.PGID, grace); err != nil {
			t.Errorf("Stop: %v", err)
		}
		if st, err := proc.ReadStat(cmd2.Process.Pid); err != nil || !st.Zombie() {
			t.Errorf("the stopped leader: got %+v, %v; want a zombie (TERM delivered, not reaped)", st, err)
		}
	})
}
