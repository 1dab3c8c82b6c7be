package supervisor

import (
	"context"
	"fmt"
	"github.com/hermes-units/hermes/proc"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
)

// TestStopAfterJanitorRelease stops a group whose leader exited, and
// which the janitor released, before the stop began: the group is empty,
// so the stop succeeded. (Once a stop has begun, the janitor leaves the
// group to it: StopAll releases its groups.)
func TestStopAfterJanitorRelease(t *testing.T) {
	o, err := New(Options{Mode: ModePGroup})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	c, err := o.SpawnOwned(t.Context(), Spec{Unit: "s", Argv: []string{"sleep", "1000"}, Env: []string{"PATH=" + os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	syscall.Kill(c.Group.Leader.PID, syscall.SIGKILL)
	<-c.Done()
	testkit.Eventually(t, 10*time.Second, "the emptied group released by the janitor", func() bool { return o.Status().Groups == 0 })
	if err := o.Stop(t.Context(), c.Group, syscall.SIGTERM, time.Second); err != nil {
		t.Errorf("Stop of a group the janitor released once empty: got %v, want nil", err)
	}
	if !o.Empty(c.Group) {
		t.Error("group not empty after Stop")
	}
}

// TestStopEndsOnLeaderExit stops a group whose leader obeys TERM, with
// the empty-group poll and the grace stretched to an hour: Stop returns
// on the leader's reaping, an event, not on a poll or the grace.
func TestStopEndsOnLeaderExit(t *testing.T) {
	for _, mode := range []Mode{ModePGroup, ModeCgroup} {
		t.Run(string(mode), func(t *testing.T) {
			o, err := New(Options{Mode: mode})
			if err != nil {
				if mode == ModeCgroup {
					t.Skipf("no cgroup mode here (%v); the pgroup case ran", err)
				}
				t.Fatal(err)
			}
			defer o.Close()
			o.emptyPoll = time.Hour
			c, err := o.SpawnOwned(t.Context(), Spec{Unit: "s", Argv: []string{"sleep", "1000"}, Env: []string{"PATH=" + os.Getenv("PATH")}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			if err := o.Stop(ctx, c.Group, syscall.SIGTERM, time.Hour); err != nil {
				t.Fatalf("Stop of a TERM-obeying leader: got %v, want nil once it is reaped", err)
			}
			if ctx.Err() != nil {
				t.Fatal("Stop returned only once its context ended, want it to return on the leader's reaping")
			}
			if !o.Empty(c.Group) {
				t.Error("group not empty after Stop")
			}
		})
	}
}

// TestStopFindsEscapeeOfTheSignal: a unit that answers its stop signal by
// starting a child that leaves the group (setsid) and then exiting: the
// child was forked after the signal, so the signal never reached it, and
// the scan before the signal could not see it. The stop must still end
// it: once the group looks empty, a scan that began after that look finds
// the escapee (re-parented to the owner, with its spawn's tags), and the
// stop signals it and waits for it too.
func TestStopFindsEscapeeOfTheSignal(t *testing.T) {
	for _, mode := range modes(t) {
		t.Run(string(mode), func(t *testing.T) {
			o, err := New(Options{Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			pidFile := t.TempDir() + "/escapee"
			script := `trap 'setsid sleep 100000 & echo $! > "$1"; exit 0' TERM; echo ok; sleep 100000 & wait`
			c, err := o.SpawnOwned(t.Context(), Spec{Unit: "late", Argv: []string{"/bin/sh", "-c", script, "sh", pidFile},
				Env: []string{"PATH=" + os.Getenv("PATH")}})
			if err != nil {
				t.Fatal(err)
			}
			pid := c.Group.Leader.PID
			testkit.Eventually(t, 10*time.Second, fmt.Sprintf("shell %d trapping TERM", pid), func() bool { return sigMask(pid, "SigCgt")&(1<<(syscall.SIGTERM-1)) != 0 })
			if err := o.Stop(t.Context(), c.Group, syscall.SIGTERM, 2*time.Second); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatalf("the trap did not write the escapee's pid: %v", err)
			}
			esc, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			st, err := proc.ReadStat(esc)
			if err == nil && !st.Zombie() {
				syscall.Kill(esc, syscall.SIGKILL)
				t.Errorf("the escapee %d (group %d, session %d) runs after Stop returned", esc, st.PGID, st.SID)
			}
		})
	}
}
