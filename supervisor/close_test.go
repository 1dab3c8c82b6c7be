package supervisor

import (
	"errors"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
)

// closeGrace is the owners' grace in TestCloseDoesNotWaitOutGrace: so long
// that a Close that waits for it, or for a leader that outlives the owner,
// never returns within the test.
const closeGrace = time.Hour

// TestCloseDoesNotWaitOutGrace: a clean stop where every owned group is
// already gone (stopped, released, or never registered: Survive) returns
// as soon as the supervisor has exited, not after the grace; and Close still
// joins the waiter of an owned group it had to kill.
func TestCloseDoesNotWaitOutGrace(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for _, mode := range []Mode{ModePGroup, ModeCgroup} {
		t.Run(string(mode), func(t *testing.T) {
			if mode == ModeCgroup {
				o, err := New(Options{Mode: ModeCgroup})
				if err != nil {
					t.Skipf("no writable cgroup v2 hierarchy here (%v); the pgroup case covers the fallback", err)
				}
				o.Close()
			}
			tests := []struct {
				name string
				// prepare spawns and steers children; it returns the ones
				// that must outlive Close, and the ones Close must reap.
				prepare func(t *testing.T, o *Owner) (outlive, reaped []*Child)
			}{
				{"owned stopped, survivor running", func(t *testing.T, o *Owner) ([]*Child, []*Child) {
					owned := spawnSimple(t, o, "owned", false)
					kept := spawnSimple(t, o, "kept", true)
					// ErrUnknown: the janitor released the emptied group
					// before Stop's own release; the group is gone either way.
					if err := o.Stop(t.Context(), owned.Group, syscall.SIGTERM, closeGrace); err != nil && !errors.Is(err, ErrUnknown) {
						t.Fatalf("Stop: %v", err)
					}
					return []*Child{kept}, nil
				}},
				{"owned released", func(t *testing.T, o *Owner) ([]*Child, []*Child) {
					c := spawnSimple(t, o, "released", false)
					if err := o.Release(t.Context(), c.Group); err != nil {
						t.Fatalf("Release: %v", err)
					}
					return []*Child{c}, nil
				}},
				{"owned still registered", func(t *testing.T, o *Owner) ([]*Child, []*Child) {
					return nil, []*Child{spawnSimple(t, o, "owned", false)}
				}},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					o := newTestOwner(t, Options{Mode: mode, Role: "worker", Grace: closeGrace})
					outlive, reaped := tt.prepare(t, o)
					closeWithin(t, o, closeGrace)
					for _, c := range reaped {
						select {
						case <-c.Done():
						default:
							t.Errorf("Close returned before the waiter of owned group %d reaped its leader", c.PGID)
						}
					}
					for _, c := range outlive {
						if o.Empty(c.Group) {
							t.Errorf("group %d of %s is empty after Close, want it to outlive the owner", c.PGID, c.Unit)
						}
					}
				})
			}
		})
	}
}

// closeWithin fails the test if o.Close has not returned before limit (or
// shortly before the test's own deadline, whichever comes first).
func closeWithin(t *testing.T, o *Owner, limit time.Duration) {
	t.Helper()
	if dl, ok := t.Deadline(); ok {
		limit = min(limit, time.Until(dl)-10*time.Second)
	}
	done := make(chan error, 1)
	go func() { done <- o.Close() }()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-timer.C:
		t.Fatalf("Close has not returned after %v with a grace of %v: it waits for groups that are already gone or outlive the owner", limit, closeGrace)
	}
}

// spawnSimple spawns the test binary as a "simple" child (it lives until
// killed) and makes sure it is gone, and reaped, at the end of the test.
func spawnSimple(t *testing.T, o *Owner, unit string, survive bool) *Child {
	t.Helper()
	env := append(os.Environ(), envHelper+"=child", envKind+"=simple")
	spec := Spec{Unit: unit, Argv: []string{os.Args[0]}, Env: env, Survive: survive}
	if survive {
		spec.Ownership, spec.Reason = "persist_on_release", "outlives the owner in the test"
	}
	c, err := o.SpawnOwned(t.Context(), spec)
	if err != nil {
		t.Fatalf("spawn %s: %v", unit, err)
	}
	t.Cleanup(func() {
		if c.Cgroup != "" {
			killCgroup(c.Cgroup)
		}
		syscall.Kill(-c.PGID, syscall.SIGKILL)
		<-c.Done()
		if c.Cgroup != "" {
			// The kernel gives no event for an empty cgroup we do not watch.
			if !testkit.Within(10*time.Second, func() bool { return groupEmpty(c.Group) }) {
				t.Errorf("cgroup %s still has members 10s after SIGKILL", c.Cgroup)
			}
			os.Remove(c.Cgroup)
		}
	})
	return c
}

// TestCloseEndsGroupsWhileLedgerWrites: Close hands the death supervisor
// its EOF without waiting for the ledger write in progress, so the
// supervisor ends the groups still registered while the records that
// trail are written; and Close still returns only once that write is
// done and nothing is left queued. The writer is held in the middle of
// the write that carries a spawn's record.
func TestCloseEndsGroupsWhileLedgerWrites(t *testing.T) {
	for _, mode := range modes(t) {
		t.Run(string(mode), func(t *testing.T) {
			dir := t.TempDir()
			o := newTestOwner(t, Options{Mode: mode, StateDir: dir, Role: "worker", Grace: 200 * time.Millisecond})
			first := spawnSimple(t, o, "first", false)
			if err := o.jr.sync(t.Context()); err != nil {
				t.Fatal(err)
			}
			gate := make(chan struct{})
			release := sync.OnceFunc(func() { close(gate) })
			t.Cleanup(release) // before the owner's own cleanup (cleanups run last first)
			o.jr.mu.Lock()
			o.jr.held = func() { <-gate }
			o.jr.mu.Unlock()
			trailing := spawnSimple(t, o, "trailing", false)
			queuedIs(t, o, 0) // the writer took the record and waits in held

			closed := make(chan error, 1)
			go func() { closed <- o.Close() }()
			for _, c := range []*Child{first, trailing} {
				testkit.Receive(t, 10*time.Second, c.Done(), "group %d of %s was not ended within 10 s of Close while the ledger write was held", c.PGID, c.Unit)
			}
			select {
			case err := <-closed:
				t.Fatalf("Close returned (%v) before the held ledger write was done", err)
			default:
			}
			release()
			if err := testkit.Receive(t, 10*time.Second, closed, "Close did not return within 10 s of the ledger write's end"); err != nil {
				t.Errorf("Close: %v", err)
			}
			if n := o.jr.queued(); n != 0 {
				t.Errorf("%d ledger changes still queued after Close, want none", n)
			}
		})
	}
}
