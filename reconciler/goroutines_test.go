package reconciler

import (
	"fmt"
	"syscall"
	"testing"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/supervisor"
)

// TestGoroutinesPerUnit: a running unit costs the reconciler and the
// supervisor three waiting goroutines: a copier for each of its output
// pipes and the supervisor's wait for its leader's exit. No goroutine
// waits for the copiers (the last one closes), nor for the exit on the
// reconciler's side (supervisor.Child.AfterExit): with thousands of units,
// each goroutine more was thousands of stacks for every garbage
// collection to scan. It holds in both modes, and a unit whose leader
// then exits is still seen to (its exit event arrives without a waiter).
func TestGoroutinesPerUnit(t *testing.T) {
	for _, mode := range []supervisor.Mode{supervisor.ModeCgroup, supervisor.ModePGroup} {
		t.Run(string(mode), func(t *testing.T) { testGoroutinesPerUnit(t, mode) })
	}
}

func testGoroutinesPerUnit(t *testing.T, mode supervisor.Mode) {
	const first, more = 5, 40
	names := func(from, to int) []string {
		var ns []string
		for i := from; i < to; i++ {
			ns = append(ns, fmt.Sprintf("g%d", i))
		}
		return ns
	}
	files := map[string]string{}
	for _, n := range names(0, first) {
		files[n+".yaml"] = "command: [sleep, '1000']\n"
	}
	l := startLiveWith(t, liveOptions{mode: mode, stamp: true}, files) // output copied through pipes, as hermesd does
	l.waitFor("the first units running", running(names(0, first)...))
	before := testkit.SettledGoroutines()
	added := map[string]string{}
	for _, n := range names(first, first+more) {
		added[n+".yaml"] = "command: [sleep, '1000']\n"
	}
	added["brief.yaml"] = "command: [sleep, '1000']\nrestart: \"no\"\n"
	testkit.WriteUnits(t, l.dir, added)
	if _, err := l.r.Reload(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	l.waitFor("the added units running", running(append(names(first, first+more), "brief")...))
	after := testkit.SettledGoroutines()
	t.Logf("%d goroutines before, %d after %d units more", before, after, more+1)
	if per := float64(after-before) / (more + 1); per > 3.5 {
		t.Errorf("%d units more took %d goroutines more (%d to %d): %.1f a unit, want 3 (a copier for each pipe, the exit's wait)", more+1, after-before, before, after, per)
	}
	// Its leader killed, the unit is seen to exit: no goroutine waited
	// for that, the supervisor's wait ran the reconciler's func.
	m := l.waitFor("brief running", running("brief"))
	if err := syscall.Kill(m["brief"].PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	l.waitFor("brief's exit seen", func(m map[string]control.Unit) bool {
		u := m["brief"]
		return u.State != control.StateRunning && u.State != control.StateStarting
	})
}
