package supervisor

import (
	"context"
	"os"
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
	o := newTestOwner(t, Options{Mode: ModePGroup})
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
			o, err := newOwner(Options{Mode: mode}, launchShell, &ownerHooks{emptyPoll: time.Hour})
			if err != nil {
				if mode == ModeCgroup {
					t.Skipf("no cgroup mode here (%v); the pgroup case ran", err)
				}
				t.Fatal(err)
			}
			defer o.Close()
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
