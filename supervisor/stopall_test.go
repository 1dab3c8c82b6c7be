//go:build linux

package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
)

// TestStopAllSignalsBeforeWaiting stops, in one StopAll, a group that
// obeys its signal and heldGroups groups that cannot act on theirs yet: a
// shell that traps the stop signal (USR1), held stopped (SIGSTOP) so that
// the signal stays pending, which /proc shows. The obeying group is the
// first of the batch; the moment its stop is done (its group empty and
// released, the first wait to end), every held shell must have its signal
// pending already: the batch signalled every group before it waited for
// any. Only then are the held shells continued; they take their signal and
// exit, and the rest of the batch is done. A held group (one that ignores
// its signal, for now) does not delay the end of the obeying one either.
func TestStopAllSignalsBeforeWaiting(t *testing.T) {
	const heldGroups = 30
	for _, mode := range modes(t) {
		t.Run(string(mode), func(t *testing.T) {
			o := newTestOwner(t, Options{Mode: mode})
			defer o.Close()
			env := []string{"PATH=" + os.Getenv("PATH")}
			obeys, err := o.SpawnOwned(t.Context(), Spec{Unit: "obeys", Argv: []string{"sleep", "100000"}, Env: env})
			if err != nil {
				t.Fatal(err)
			}
			orders := []StopOrder{{Group: obeys.Group, Signal: syscall.SIGUSR1, Grace: time.Hour}}
			var held []Group
			for i := range heldGroups {
				c, err := o.SpawnOwned(t.Context(), Spec{Unit: fmt.Sprintf("held%d", i),
					Argv: []string{"/bin/sh", "-c", `trap "exit 0" USR1; sleep 100000 & wait`}, Env: env})
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, c.Group)
				orders = append(orders, StopOrder{Group: c.Group, Signal: syscall.SIGUSR1, Grace: time.Hour})
			}
			t.Cleanup(func() {
				for _, g := range held {
					syscall.Kill(-g.PGID, syscall.SIGKILL)
				}
			})
			for _, g := range held {
				pid := g.Leader.PID
				testkit.Eventually(t, 10*time.Second, fmt.Sprintf("shell %d trapping USR1", pid), func() bool { return sigMask(pid, "SigCgt")&usr1 != 0 })
				syscall.Kill(-g.PGID, syscall.SIGSTOP)
				testkit.Eventually(t, 10*time.Second, fmt.Sprintf("shell %d stopped", pid), func() bool {
					st, err := proc.ReadStat(pid)
					return err == nil && st.State == 'T'
				})
			}

			var mu sync.Mutex
			signalled := 0
			var order []string // "signalled", then each order's index as it is done
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			err = o.StopAll(ctx, orders, func() {
				mu.Lock()
				defer mu.Unlock()
				signalled++
				order = append(order, "signalled")
			}, func(i int, err error) {
				if err != nil {
					t.Errorf("stop of %s: %v", orders[i].Group.Unit, err)
				}
				mu.Lock()
				order = append(order, strconv.Itoa(i))
				mu.Unlock()
				if i != 0 {
					return
				}
				for _, g := range held {
					if (sigMask(g.Leader.PID, "ShdPnd")|sigMask(g.Leader.PID, "SigPnd"))&usr1 == 0 {
						t.Errorf("the obeying group's stop was done before %s (shell %d) had its signal", g.Unit, g.Leader.PID)
					}
				}
				for _, g := range held {
					syscall.Kill(-g.PGID, syscall.SIGCONT)
				}
			})
			if err != nil {
				t.Errorf("StopAll: got %v, want nil", err)
			}
			if signalled != 1 || len(order) != heldGroups+2 || order[0] != "signalled" {
				t.Fatalf("StopAll's calls: got %v, want signalled once, first, then one done for each of the %d orders", order, heldGroups+1)
			}
			if order[1] != "0" {
				t.Errorf("first stop done: got order %s, want 0, the group that obeys (the others were held)", order[1])
			}
			for _, s := range orders {
				if !o.Empty(s.Group) {
					t.Errorf("%s not empty after StopAll", s.Group.Unit)
				}
			}
			if n := o.Status().Groups; n != 0 {
				t.Errorf("registered groups after StopAll: got %d, want 0", n)
			}
		})
	}
}

const usr1 = 1 << (syscall.SIGUSR1 - 1)

// sigMask reads the signal mask field (SigCgt, ShdPnd, SigPnd) of pid's
// /proc status; 0 when unreadable.
func sigMask(pid int, field string) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return n
		}
	}
	return 0
}

// TestStopEndsOnCgroupEvents (cgroup mode) stops a group whose leader
// obeys TERM but leaves a child that ignores it, with the empty-group poll
// and the grace stretched to an hour: once the test kills the child, Stop
// returns on the change of the cgroup's cgroup.events, an event, not on a
// poll or the grace.
func TestStopEndsOnCgroupEvents(t *testing.T) {
	if ok, why := cgroupAvailable(); !ok {
		t.Skip(why)
	}
	o, err := newOwner(Options{Mode: ModeCgroup}, launchShell, &ownerHooks{emptyPoll: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	c, err := o.SpawnOwned(t.Context(), Spec{Unit: "s", Env: []string{"PATH=" + os.Getenv("PATH")},
		Argv: []string{"/bin/sh", "-c", `(trap "" TERM; exec sleep 100000) & echo started; wait`}})
	if err != nil {
		t.Fatal(err)
	}
	// Its child ignores TERM once it runs sleep (not before: a TERM
	// between its fork and its trap ends it).
	testkit.Eventually(t, 10*time.Second, "the leader's child to run sleep, ignoring TERM", func() bool {
		ps := cgroupProcs(c.Group.Cgroup)
		return len(ps) == 2 && slices.ContainsFunc(ps, func(pid int) bool {
			argv, _ := proc.Cmdline(pid)
			return len(argv) > 0 && argv[0] == "sleep" && sigMask(pid, "SigIgn")&(1<<(syscall.SIGTERM-1)) != 0
		})
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- o.Stop(ctx, c.Group, syscall.SIGTERM, time.Hour) }()
	<-c.Done() // the leader took its TERM; its child did not
	left := cgroupProcs(c.Group.Cgroup)
	if len(left) != 1 {
		t.Fatalf("members after the leader's exit: got %v, want its child alone", left)
	}
	syscall.Kill(left[0], syscall.SIGKILL)
	if err := <-stopped; err != nil {
		t.Fatalf("Stop once the child was killed: got %v, want nil", err)
	}
	if ctx.Err() != nil {
		t.Fatal("Stop returned only once its context ended, want it to return on the cgroup's emptying")
	}
	if !o.Empty(c.Group) {
		t.Error("group not empty after Stop")
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
			o := newTestOwner(t, Options{Mode: mode})
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

// TestStopAllRemovesEachCgroupAtItsEnd (cgroup mode): a group of a
// StopAll has its cgroup removed once it is empty, before its done, while
// another group of the batch still holds out (it ignores its signal): the
// removals are not all left for the end of the batch, when the owner's
// exit would wait for them.
func TestStopAllRemovesEachCgroupAtItsEnd(t *testing.T) {
	if ok, why := cgroupAvailable(); !ok {
		t.Skipf("cgroup mode not available: %s", why)
	}
	o := newTestOwner(t, Options{Mode: ModeCgroup})
	defer o.Close()
	env := []string{"PATH=" + os.Getenv("PATH")}
	quick, err := o.SpawnOwned(t.Context(), Spec{Unit: "quick", Argv: []string{"sleep", "100000"}, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	deaf, err := o.SpawnOwned(t.Context(), Spec{Unit: "deaf", Argv: []string{"/bin/sh", "-c", `trap "" TERM; exec sleep 100000`}, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if quick.Group.Cgroup == "" || deaf.Group.Cgroup == "" {
		t.Fatalf("cgroups: got %q and %q, want one each", quick.Group.Cgroup, deaf.Group.Cgroup)
	}
	if deaf.Group.PGID <= 1 {
		t.Fatalf("spawned group %d: want a group of its own", deaf.Group.PGID)
	}
	t.Cleanup(func() { syscall.Kill(-deaf.Group.PGID, syscall.SIGKILL) })
	pid := deaf.Group.Leader.PID
	testkit.Eventually(t, 10*time.Second, "the shell ignoring TERM", func() bool { return sigMask(pid, "SigIgn")&(1<<(syscall.SIGTERM-1)) != 0 })

	orders := []StopOrder{{Group: quick.Group, Signal: syscall.SIGTERM, Grace: time.Hour}, {Group: deaf.Group, Signal: syscall.SIGTERM, Grace: time.Hour}}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err = o.StopAll(ctx, orders, nil, func(i int, err error) {
		if err != nil {
			t.Errorf("stop of %s: %v", orders[i].Group.Unit, err)
		}
		if i != 0 {
			return
		}
		if _, err := os.Stat(quick.Group.Cgroup); !os.IsNotExist(err) {
			t.Errorf("cgroup of %s at its done, the other group still running: got %v, want it removed", quick.Group.Unit, err)
		}
		if err := syscall.Kill(-deaf.Group.PGID, syscall.SIGKILL); err != nil {
			t.Error(err)
		}
	})
	if err != nil {
		t.Errorf("StopAll: got %v, want nil", err)
	}
	for _, g := range []Group{quick.Group, deaf.Group} {
		if _, err := os.Stat(g.Cgroup); !os.IsNotExist(err) {
			t.Errorf("cgroup of %s after StopAll: got %v, want it removed", g.Unit, err)
		}
	}
}

// TestStopAllCgroupBelowUnit (cgroup mode): a unit that made a cgroup
// below its own (a delegated subtree, as a container runtime makes) is
// empty once its processes are gone, though its cgroup cannot be removed
// while the one below is there (rmdir fails with EBUSY, as it does while
// a process is left). The stop ends at once, without waiting out its
// grace or a KILL, and the other group of the batch is removed as usual.
func TestStopAllCgroupBelowUnit(t *testing.T) {
	if ok, why := cgroupAvailable(); !ok {
		t.Skipf("cgroup mode not available: %s", why)
	}
	o := newTestOwner(t, Options{Mode: ModeCgroup})
	defer o.Close()
	env := []string{"PATH=" + os.Getenv("PATH")}
	nested, err := o.SpawnOwned(t.Context(), Spec{Unit: "nested", Argv: []string{"sleep", "100000"}, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := o.SpawnOwned(t.Context(), Spec{Unit: "plain", Argv: []string{"sleep", "100000"}, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if nested.Group.Cgroup == "" || plain.Group.Cgroup == "" {
		t.Fatalf("cgroups: got %q and %q, want one each", nested.Group.Cgroup, plain.Group.Cgroup)
	}
	below := filepath.Join(nested.Group.Cgroup, "below")
	if err := os.Mkdir(below, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Rmdir(below)
		syscall.Rmdir(nested.Group.Cgroup)
	})
	orders := []StopOrder{{Group: nested.Group, Signal: syscall.SIGTERM, Grace: time.Hour}, {Group: plain.Group, Signal: syscall.SIGTERM, Grace: time.Hour}}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := o.StopAll(ctx, orders, nil, func(i int, err error) {
		if err != nil {
			t.Errorf("stop of %s: %v", orders[i].Group.Unit, err)
		}
	}); err != nil {
		t.Fatalf("StopAll: got %v, want nil (ended by the test's minute: %v)", err, ctx.Err())
	}
	if _, err := os.Stat(below); err != nil {
		t.Errorf("the unit's own cgroup below: got %v, want it left for its maker", err)
	}
	if _, err := os.Stat(plain.Group.Cgroup); !os.IsNotExist(err) {
		t.Errorf("cgroup of %s after StopAll: got %v, want it removed", plain.Group.Unit, err)
	}
	for _, c := range []*Child{nested, plain} {
		select {
		case <-c.Done():
		default:
			t.Errorf("%s: leader not reaped after StopAll", c.Group.Unit)
		}
	}
}
