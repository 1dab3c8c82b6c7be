//go:build linux

package supervisor

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
)

// checkPending fails t unless o's pending set and keyed count say what
// its registrations are: pending holds exactly the registered groups
// whose leader is gone or that are to be released once empty and that
// no StopAll holds, keyed counts the ones with a spawn key.
func checkPending(t *testing.T, o *Owner) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	keyed := 0
	for _, r := range o.regs {
		if r.key != "" {
			keyed++
		}
		if want := (r.leaderGone || r.onceEmpty) && !r.stopping; o.pending[r] != want {
			t.Errorf("group %d of %s: pending %v, want %v (leader gone %v, once empty %v, stopping %v)", r.g.PGID, r.g.Unit, o.pending[r], want, r.leaderGone, r.onceEmpty, r.stopping)
		}
	}
	for r := range o.pending {
		if o.regs[r.id] != r {
			t.Errorf("group %d of %s: pending but not registered", r.g.PGID, r.g.Unit)
		}
	}
	if o.keyed != keyed {
		t.Errorf("keyed: got %d, want %d", o.keyed, keyed)
	}
}

// TestJanitorLooksAtPendingOnly: the janitor's pass looks at the groups
// that wait for it (a leader gone, a release once empty), not at every
// group registered nor at those a StopAll holds, so that a stop of
// thousands of units, which wakes it at each leader's exit, does not cost
// their square. The set it looks at stays what the registrations say
// through exits, a release once empty and a batch stop, and is empty at
// the end.
func TestJanitorLooksAtPendingOnly(t *testing.T) {
	const groups = 20
	for _, mode := range modes(t) {
		t.Run(string(mode), func(t *testing.T) {
			var most atomic.Int64
			h := &ownerHooks{tidyLooked: func(n int) {
				for m := most.Load(); int64(n) > m && !most.CompareAndSwap(m, int64(n)); m = most.Load() {
				}
			}}
			o, err := newOwner(Options{Mode: mode}, launchShell, h)
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			env := []string{"PATH=" + os.Getenv("PATH")}
			var cs []*Child
			for i := range groups {
				c, err := o.SpawnOwned(t.Context(), Spec{Unit: fmt.Sprintf("u%d", i), Argv: []string{"sleep", "100000"}, Env: env})
				if err != nil {
					t.Fatal(err)
				}
				cs = append(cs, c)
			}
			t.Cleanup(func() {
				for _, c := range cs {
					syscall.Kill(-c.Group.PGID, syscall.SIGKILL)
				}
			})
			checkPending(t, o)
			left := func() int { return o.Status().Groups }

			// A leader's exit: its group is looked at, alone, and dropped.
			syscall.Kill(cs[0].Group.Leader.PID, syscall.SIGKILL)
			testkit.Eventually(t, 10*time.Second, "the killed unit's group dropped", func() bool { return left() == groups-1 })
			checkPending(t, o)
			if got := most.Load(); got != 1 {
				t.Errorf("most groups a janitor's pass looked at, %d registered and one leader gone: %d, want 1", groups, got)
			}

			// A release once empty: pending from the call on, dropped once empty.
			if err := o.ReleaseOnceEmpty(t.Context(), cs[1].Group); err != nil {
				t.Fatal(err)
			}
			checkPending(t, o)
			syscall.Kill(-cs[1].Group.PGID, syscall.SIGKILL)
			testkit.Eventually(t, 10*time.Second, "the released group dropped", func() bool { return left() == groups-2 })
			checkPending(t, o)

			// The rest in one batch: the groups it holds are its own to
			// drop, and no pass of the janitor looks at them meanwhile.
			most.Store(0)
			var orders []StopOrder
			for _, c := range cs[2:] {
				orders = append(orders, StopOrder{Group: c.Group, Signal: syscall.SIGTERM, Grace: 5 * time.Second})
			}
			if err := o.StopAll(t.Context(), orders, func() { checkPending(t, o) }, func(int, error) { checkPending(t, o) }); err != nil {
				t.Fatal(err)
			}
			if got := most.Load(); got != 0 {
				t.Errorf("most groups a janitor's pass looked at while one StopAll held every group: %d, want 0", got)
			}
			testkit.Eventually(t, 10*time.Second, "every group dropped", func() bool { return left() == 0 })
			checkPending(t, o)
			o.mu.Lock()
			pending, keyed := len(o.pending), o.keyed
			o.mu.Unlock()
			if pending != 0 || keyed != 0 {
				t.Errorf("after every group was dropped: %d pending, %d keyed; want 0 and 0", pending, keyed)
			}
		})
	}
}
