package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
)

// TestSignal: Signal reaches every member of a group (the leader and its
// child, each of which traps HUP and notes it) and stops nothing: both
// live on; SignalProcess reaches the leader alone; a recycled or gone
// identity is not signalled.
func TestSignal(t *testing.T) {
	marker := newMarker(t, "signal")
	o := newTestOwner(t, Options{Mode: ModePGroup, Grace: testGrace})
	t.Cleanup(func() { o.Close() })
	notes := filepath.Join(t.TempDir(), "notes")
	script := `trap 'echo leader >> "$F"' HUP
(trap 'echo child >> "$F"' HUP; echo up >> "$F"; while :; do sleep 0.05; done) &
while :; do sleep 0.05; done`
	c, err := o.SpawnOwned(t.Context(), Spec{Unit: "s", Argv: []string{"sh", "-c", script},
		Env: append(os.Environ(), envRow+"="+marker, "F="+notes)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-c.PGID, syscall.SIGKILL)
		<-c.Done()
	})
	read := func() string { b, _ := os.ReadFile(notes); return string(b) }
	testkit.Eventually(t, 20*time.Second, "the child to be up", func() bool { return strings.Contains(read(), "up") })
	if err := o.Signal(c.Group, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, "both to note the HUP", func() bool {
		s := read()
		return strings.Count(s, "leader") == 1 && strings.Count(s, "child") == 1
	})
	select {
	case <-c.Done():
		t.Fatalf("the leader exited on a HUP it traps: %v", c.Err())
	default:
	}
	if err := SignalProcess(c.Leader, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, "the leader alone to note the second HUP", func() bool {
		return strings.Count(read(), "leader") == 2
	})
	if n := strings.Count(read(), "child"); n != 1 {
		t.Errorf("got %d HUPs noted by the child, want 1: SignalProcess reached more than the leader", n)
	}
	stale := c.Leader
	stale.StartTime++
	if err := SignalProcess(stale, syscall.SIGHUP); err == nil {
		t.Errorf("SignalProcess of an identity with another start time: got nil, want an error")
	}
	if err := o.Signal(Group{Unit: "x", PGID: 1}, syscall.SIGHUP); err == nil {
		t.Errorf("Signal of pgid 1: got nil, want ErrUnsafe")
	}
}
