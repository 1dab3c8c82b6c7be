//go:build linux

package supervisor

import (
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
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
	o, err := newOwner(Options{Mode: ModeCgroup, Grace: testGrace}, launchShell, hooks)
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

// TestStopAllSignalsLoneGroupsBeforeScan (pgroup mode): a StopAll gives
// a group that is its leader alone its signal before the batch's scan of
// the process table, and a group whose leader has a child its signal
// after it (the scan reads the parent links the signal may cut). Both
// groups end, the child with its group.
func TestStopAllSignalsLoneGroupsBeforeScan(t *testing.T) {
	var mu sync.Mutex
	var order []int // pids signalled; -1 for a scan's view
	hooks := &ownerHooks{
		signalled:  func(pid int) { mu.Lock(); order = append(order, pid); mu.Unlock() },
		scanViewed: func() { mu.Lock(); order = append(order, -1); mu.Unlock() },
	}
	o, err := newOwner(Options{Mode: ModePGroup, Grace: testGrace}, launchShell, hooks)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	env := []string{"PATH=" + os.Getenv("PATH")}
	parent, err := o.SpawnOwned(t.Context(), Spec{Unit: "parent", Argv: []string{"/bin/sh", "-c", "sleep 100000 & wait"}, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	lone, err := o.SpawnOwned(t.Context(), Spec{Unit: "lone", Argv: []string{"sleep", "100000"}, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	var child int
	testkit.Eventually(t, 10*time.Second, "the parent unit's child", func() bool {
		kids, _ := proc.Children(parent.Leader.PID)
		if len(kids) == 1 {
			child = kids[0]
		}
		return child > 0
	})
	mu.Lock()
	order = nil
	mu.Unlock()
	orders := []StopOrder{{Group: parent.Group, Signal: syscall.SIGTERM, Grace: time.Minute}, {Group: lone.Group, Signal: syscall.SIGTERM, Grace: time.Minute}}
	if err := o.StopAll(t.Context(), orders, nil, func(int, error) {}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := slices.Clone(order)
	mu.Unlock()
	scan, l, p := slices.Index(got, -1), slices.Index(got, lone.PGID), slices.Index(got, parent.PGID)
	if scan < 0 || l < 0 || p < 0 {
		t.Fatalf("events %v (-1: a scan): want a scan and both groups signalled", got)
	}
	if l > scan {
		t.Errorf("events %v: the lone group %d was signalled after the scan, want before", got, lone.PGID)
	}
	if p < scan {
		t.Errorf("events %v: the group %d whose leader has a child was signalled before the scan, want after", got, parent.PGID)
	}
	if st, err := proc.ReadStat(child); err == nil && !st.Zombie() {
		t.Errorf("the parent unit's child %d outlived its StopAll", child)
	}
}
