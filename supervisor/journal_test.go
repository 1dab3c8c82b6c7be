package supervisor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
)

// holdLedger takes the ledger lock of dir as another writer would, so that
// the owner's writes queue up behind it; the returned func releases it.
func holdLedger(t *testing.T, dir string) (release func()) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, ledger.LockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	done := false
	release = func() {
		if !done {
			done = true
			unix.Flock(int(f.Fd()), unix.LOCK_UN)
			f.Close()
		}
	}
	t.Cleanup(release)
	return release
}

// entries reads the ledger as written (no prune).
func entries(t *testing.T, dir string) map[string]ledger.Entry {
	t.Helper()
	l, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	es, err := l.Entries(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]ledger.Entry{}
	for _, e := range es {
		out[e.Unit] = e
	}
	return out
}

// queuedIs waits until the owner's journal holds n ops (the writer takes a
// batch at once; while it waits for the lock, later ops stay queued).
func queuedIs(t *testing.T, o *Owner, n int) {
	t.Helper()
	if !testkit.Within(10*time.Second, func() bool { return o.jr.queued() == n }) {
		t.Fatalf("journal queue: got %d ops, want %d", o.jr.queued(), n)
	}
}

// TestLedgerRecords: an owned spawn's record trails by at most one write; a
// Survive spawn's record is on disk when SpawnOwned returns.
func TestLedgerRecords(t *testing.T) {
	for _, mode := range modes(t) {
		t.Run(string(mode), func(t *testing.T) {
			dir := t.TempDir()
			o := newTestOwner(t, Options{Mode: mode, StateDir: dir, Role: "worker", Grace: 200 * time.Millisecond})
			defer o.Close()
			release := holdLedger(t, dir)
			owned := spawnSimple(t, o, "owned", false) // returns while the ledger is locked
			release()
			kept := spawnSimple(t, o, "kept", true)
			if _, ok := entries(t, dir)["kept"]; !ok {
				t.Errorf("Survive spawn: no ledger record when SpawnOwned returned")
			}
			if err := o.jr.sync(t.Context()); err != nil {
				t.Fatal(err)
			}
			es := entries(t, dir)
			for _, c := range []*Child{owned, kept} {
				if e, ok := es[c.Unit]; !ok || e.Leader != c.Leader {
					t.Errorf("record of %s: got %+v (found %v), want leader %v", c.Unit, e, ok, c.Leader)
				}
			}
		})
	}
}

// TestLedgerOrdering: Release and the removal of an emptied group are
// queued behind records that still trail, whether the record is being
// written (in flight) or still queued.
func TestLedgerOrdering(t *testing.T) {
	for _, mode := range modes(t) {
		t.Run(string(mode), func(t *testing.T) {
			dir := t.TempDir()
			o := newTestOwner(t, Options{Mode: mode, StateDir: dir, Role: "worker", Grace: 200 * time.Millisecond})
			t.Cleanup(func() { o.Close() }) // after the gate opens (cleanups run last first)
			// The writer takes the first batch and waits in held.
			gate := make(chan struct{})
			release := sync.OnceFunc(func() { close(gate) })
			t.Cleanup(release)
			o.jr.mu.Lock()
			o.jr.held = func() { <-gate }
			o.jr.mu.Unlock()
			inFlight := spawnSimple(t, o, "in-flight", false)
			queuedIs(t, o, 0)
			queued := spawnSimple(t, o, "queued", false)
			removed := spawnSimple(t, o, "removed", false)
			queuedIs(t, o, 2)

			rel := make(chan error, 2)
			go func() { rel <- o.Release(t.Context(), inFlight.Group) }()
			queuedIs(t, o, 3)
			go func() { rel <- o.Release(t.Context(), queued.Group) }()
			queuedIs(t, o, 4)
			// removed: its leader exits; its group is dropped (by the
			// janitor or by ReleaseOnceEmpty) before its record was written.
			syscall.Kill(-removed.PGID, syscall.SIGKILL)
			if removed.Cgroup != "" {
				killCgroup(removed.Cgroup)
			}
			<-removed.Done()
			roe := make(chan error, 1)
			go func() { roe <- o.ReleaseOnceEmpty(t.Context(), removed.Group) }()
			queuedIs(t, o, 5)
			release()
			if err := <-roe; err != nil && !errors.Is(err, ErrUnknown) {
				t.Errorf("ReleaseOnceEmpty: %v", err)
			}
			for range 2 {
				if err := <-rel; err != nil {
					t.Errorf("Release: %v", err)
				}
			}
			if err := o.jr.sync(t.Context()); err != nil {
				t.Fatal(err)
			}
			es := entries(t, dir)
			for _, c := range []*Child{inFlight, queued} {
				if e := es[c.Unit]; e.State != "released" {
					t.Errorf("record of released %s: state %q (present %v), want released", c.Unit, e.State, e.Leader == c.Leader)
				}
			}
			if e, ok := es["removed"]; ok {
				t.Errorf("record of the dropped group: got %+v, want none", e)
			}
		})
	}
}

// TestJournalCloseDrains: close writes what is queued even when the writer
// sees the stop before the wake-up.
func TestJournalCloseDrains(t *testing.T) {
	dir := t.TempDir()
	l, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	j := makeJournal(t.Context(), l, t.Logf)
	self := selfIdentity(t)
	for _, u := range []string{"a", "b"} {
		j.post(func(es []ledger.Entry) []ledger.Entry {
			return append(es, ledger.Entry{Unit: u, Leader: self, PGID: syscall.Getpgrp()})
		})
	}
	<-j.wake // the writer will see only the stop
	go j.run()
	j.close()
	var got []string
	for u := range entries(t, dir) {
		got = append(got, u)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("units written by close: got %v, want [a b]", got)
	}
}

func selfIdentity(t *testing.T) proc.Identity {
	t.Helper()
	id, err := proc.Self()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// queued reports how many ops wait for the writer.
func (j *journal) queued() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.queue)
}

// sync waits until every op queued before the call has been applied.
func (j *journal) sync(ctx context.Context) error {
	return j.do(ctx, func(es []ledger.Entry) []ledger.Entry { return es })
}
