package supervisor

import (
	"os"
	"syscall"
	"testing"
	"time"
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
		if !eventually(10*time.Second, func() bool { return o.Status().Groups == 0 }) {
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
