//go:build linux

package supervisor

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
)

// TestStopAllOwesSIGCHLDScans (pgroup mode): while a StopAll runs, a
// SIGCHLD wakes the janitor but does not make it read the process table
// (the batch's own scans do that, and each of its leaders' exits sends
// one); the scan is owed, and comes once the StopAll is over. The batch is
// one group that ignores its signal, so the StopAll runs until the test
// kills the group; SIGCHLDs come from children the test runs, and a
// second spawn, outside the batch, stays registered. A janitor
// pass that comes escapeeScan or more after the last scan began may be a
// timed scan, which is not owed: such a try proves nothing and is made
// again.
func TestStopAllOwesSIGCHLDScans(t *testing.T) {
	var scans atomic.Int64
	hooks := &ownerHooks{scanViewed: func() { scans.Add(1) }}
	o, err := newOwner(Options{Mode: ModePGroup, Grace: testGrace}, launchShell, hooks)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	c, err := o.SpawnOwned(t.Context(), Spec{Unit: "deaf", Argv: []string{"/bin/sh", "-c", `trap "" TERM; exec sleep 100000`},
		Env: []string{"PATH=" + os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	g := c.Group
	if g.PGID <= 1 {
		t.Fatalf("spawned group %d: want a group of its own", g.PGID)
	}
	t.Cleanup(func() { syscall.Kill(-g.PGID, syscall.SIGKILL) })
	// A spawn outside the batch stays registered: the janitor scans only
	// while a spawn is.
	if _, err := o.SpawnOwned(t.Context(), Spec{Unit: "bystander", Argv: []string{"sleep", "100000"}, Env: []string{"PATH=" + os.Getenv("PATH")}}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the shell ignoring TERM", func() bool { return sigMask(g.Leader.PID, "SigIgn")&(1<<(syscall.SIGTERM-1)) != 0 })

	signalled := make(chan struct{})
	stopped := make(chan error, 1)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	go func() {
		stopped <- o.StopAll(ctx, []StopOrder{{Group: g, Signal: syscall.SIGTERM, Grace: time.Hour}}, func() { close(signalled) }, func(int, error) {})
	}()
	testkit.Receive(t, hangBound, signalled, "the StopAll did not signal its group")

	// childExit runs a child of the test process to its end: a SIGCHLD.
	childExit := func() {
		if err := exec.Command("true").Run(); err != nil {
			t.Fatal(err)
		}
	}
	// pass waits for the janitor's next pass after a SIGCHLD.
	pass := func() {
		n := o.hooks.passes.Load()
		childExit()
		testkit.Eventually(t, hangBound, "a janitor pass after a SIGCHLD", func() bool { return o.hooks.passes.Load() > n })
	}
	proved := false
	for try := 0; try < 20 && !proved; try++ {
		n := scans.Load()
		pass()
		pass() // the first pass is over, its scan (if any) counted
		o.mu.Lock()
		since := time.Since(o.scanned)
		o.mu.Unlock()
		if since >= escapeeScan {
			continue // a timed scan may have come: no proof either way
		}
		if got := scans.Load(); got != n {
			t.Fatalf("scans during the StopAll after a SIGCHLD: got %d, want none (owed until it is over)", got-n)
		}
		proved = true
	}
	if !proved {
		t.Fatal("no janitor pass came within escapeeScan of the last scan in 20 tries")
	}

	if err := syscall.Kill(-g.PGID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := testkit.Receive(t, hangBound, stopped, "StopAll did not return once its group was killed"); err != nil {
		t.Fatalf("StopAll: %v", err)
	}
	n := scans.Load()
	testkit.Eventually(t, hangBound, "the owed scan after the StopAll", func() bool { return scans.Load() > n })
}

// TestLateScansGatherTheBatch (pgroup mode): the late scan a group of a
// StopAll asks for once it looks empty waits until the batch's other
// leaders are reaped (here for as long as it takes: the hook lifts the
// bound of one scan's length), so that groups ending moments apart share
// one read of the process table. Group a's leader exits on its signal;
// b's is stopped (SIGSTOP) and gets its signal only once continued, which
// the test does once a's late scan is waiting in gather (or, if gather
// did not wait, running). Scans are told apart by who asked for them: a
// janitor's scan during the StopAll (a timed one, or one it had decided
// on before the StopAll began) may answer a late scan by itself, and a
// try that had one is made again.
func TestLateScansGatherTheBatch(t *testing.T) {
	var late, janitor atomic.Int64
	asker := func() string {
		buf := make([]byte, 64<<10)
		return string(buf[:runtime.Stack(buf, false)])
	}
	hooks := &ownerHooks{scanViewed: func() {
		switch st := asker(); {
		case strings.Contains(st, "(*lateScans).after"):
			late.Add(1)
		case strings.Contains(st, "(*Owner).tidy"):
			janitor.Add(1)
		}
	}, gather: hangBound}
	o, err := newOwner(Options{Mode: ModePGroup, Grace: testGrace}, launchShell, hooks)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	env := []string{"PATH=" + os.Getenv("PATH")}
	gathering := func() bool {
		buf := make([]byte, 1<<20)
		return strings.Contains(string(buf[:runtime.Stack(buf, true)]), "(*lateScans).gather")
	}
	for try := 0; try < 5; try++ {
		a, err := o.SpawnOwned(t.Context(), Spec{Unit: "a", Argv: []string{"sleep", "100000"}, Env: env})
		if err != nil {
			t.Fatal(err)
		}
		b, err := o.SpawnOwned(t.Context(), Spec{Unit: "b", Argv: []string{"sleep", "100000"}, Env: env})
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range []Group{a.Group, b.Group} {
			if g.PGID <= 1 {
				t.Fatalf("spawned group %d: want a group of its own", g.PGID)
			}
		}
		t.Cleanup(func() { syscall.Kill(-a.Group.PGID, syscall.SIGKILL); syscall.Kill(-b.Group.PGID, syscall.SIGKILL) })
		if err := syscall.Kill(-b.Group.PGID, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		bp := b.Group.Leader.PID
		testkit.Eventually(t, 10*time.Second, "b's leader stopped", func() bool { return procState(bp) == 'T' })

		late.Store(0)
		j0 := janitor.Load()
		stopped := make(chan error, 1)
		go func() {
			orders := []StopOrder{{Group: a.Group, Signal: syscall.SIGTERM, Grace: time.Hour}, {Group: b.Group, Signal: syscall.SIGTERM, Grace: time.Hour}}
			stopped <- o.StopAll(t.Context(), orders, nil, func(int, error) {})
		}()
		testkit.Receive(t, hangBound, a.Done(), "a's leader was not reaped after its signal")
		testkit.Eventually(t, hangBound, "a's late scan gathering or running", func() bool { return gathering() || late.Load() > 0 })
		if err := syscall.Kill(-b.Group.PGID, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		if err := testkit.Receive(t, hangBound, stopped, "StopAll did not return once b was continued"); err != nil {
			t.Fatalf("StopAll: %v", err)
		}
		if janitor.Load() != j0 {
			continue // a janitor's scan may have answered a late one: no proof either way
		}
		if n := late.Load(); n != 1 {
			t.Fatalf("late scans of the batch: got %d, want 1 (a's waits for b's leader)", n)
		}
		return
	}
	t.Fatal("every one of 5 StopAlls had a janitor's scan during it")
}

// procState is pid's state letter in its stat file, 0 when unreadable.
func procState(pid int) byte {
	st, err := proc.ReadStat(pid)
	if err != nil {
		return 0
	}
	return st.State
}
