package supervisor

import (
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
)

// TestStopAllSignalsLeadersFirst (cgroup mode): a StopAll gives every
// spawned leader of its batch its signal before it signals any other
// member of a group: the leader of the second group gets its TERM before
// the child of the first group's leader does. A leader alone, the usual
// unit, then does not wait behind the reads of the other groups' members.
func TestStopAllSignalsLeadersFirst(t *testing.T) {
	if ok, why := cgroupAvailable(); !ok {
		t.Skipf("cgroup mode not available here (%s): the leaders' own signal is a cgroup mode step", why)
	}
	var mu sync.Mutex
	var order []int
	hooks := &ownerHooks{signalled: func(pid int) {
		mu.Lock()
		order = append(order, pid)
		mu.Unlock()
	}}
	o, err := newOwner(Options{Mode: ModeCgroup, Grace: testGrace}, startShell, hooks)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	env := []string{"PATH=" + os.Getenv("PATH")}
	first, err := o.SpawnOwned(t.Context(), Spec{Unit: "first", Argv: []string{"/bin/sh", "-c", "sleep 100000 & wait"}, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	second, err := o.SpawnOwned(t.Context(), Spec{Unit: "second", Argv: []string{"sleep", "100000"}, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	var child int
	testkit.Eventually(t, 10*time.Second, "the first unit's child in its cgroup", func() bool {
		for _, pid := range cgroupProcs(first.Cgroup) {
			if pid != first.Leader.PID {
				child = pid
				return true
			}
		}
		return false
	})
	orders := []StopOrder{{Group: first.Group, Signal: syscall.SIGTERM, Grace: time.Minute}, {Group: second.Group, Signal: syscall.SIGTERM, Grace: time.Minute}}
	if err := o.StopAll(t.Context(), orders, nil, func(int, error) {}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := slices.Clone(order)
	mu.Unlock()
	at := func(pid int) int {
		i := slices.Index(got, pid)
		if i < 0 {
			t.Fatalf("process %d got no signal; the signals went to %v", pid, got)
		}
		return i
	}
	if at(second.Leader.PID) > at(child) {
		t.Errorf("signals in the order %v: the second group's leader %d after the first group's child %d, want every leader first", got, second.Leader.PID, child)
	}
	if at(first.Leader.PID) > at(child) {
		t.Errorf("signals in the order %v: the first group's leader %d after its child %d", got, first.Leader.PID, child)
	}
}
