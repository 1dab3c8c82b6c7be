package supervisor

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
)

// TestStopAfterJanitorRelease stops a group whose leader's exit lets the
// janitor release it before Stop does: the group is empty, so the stop
// succeeded.
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
	o.emptied = func() {
		<-c.Done()
		if !testkit.Within(10*time.Second, func() bool { return o.Status().Groups == 0 }) {
			t.Error("the janitor did not release the emptied group")
		}
	}
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
