package reconciler

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/units"
)

// TestStatusWhileRunBusy: a status is answered while Run's goroutine is
// held in a step (as by a long pass), from the snapshot of the state it
// was in; once a control call was answered, a status shows what the call
// did, waiting for Run if it must; and statuses of an idle Run cost it no
// new snapshot.
func TestStatusWhileRunBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := &files{specs: map[string]units.Spec{"a": spec("a"), "b": spec("b")}}
		r := runOver(t, &fakeSpawner{fail: map[string]error{}}, fs)
		synctest.Wait()
		states := func(st control.Status) map[string]control.UnitState {
			m := map[string]control.UnitState{}
			for _, u := range st.Units {
				m[u.Name] = u.State
			}
			return m
		}
		st, err := r.Status(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		idle := r.served.snaps.cur.Load()
		if _, err := r.Status(t.Context(), "a"); err != nil {
			t.Fatal(err)
		}
		if r.served.snaps.cur.Load() != idle {
			t.Errorf("a second status of an idle Run built a new snapshot")
		}

		hold := func() (release func()) {
			gate, held := make(chan struct{}), make(chan struct{})
			go r.call(context.Background(), false, func(context.Context) { close(held); <-gate })
			<-held
			return func() { close(gate); synctest.Wait() }
		}
		release := hold()
		busy, err := r.Status(t.Context()) // deadlocks if it waits for Run
		if err != nil {
			t.Fatal(err)
		}
		if got, want := states(busy), states(st); got["a"] != want["a"] || got["b"] != want["b"] || got["a"] != control.StateRunning {
			t.Errorf("status while Run is busy: %v, want the state it was idle in, %v", got, want)
		}
		if _, err := r.Status(t.Context(), "nope"); !errors.Is(err, control.ErrUnknownUnit) {
			t.Errorf("status of an unknown unit while Run is busy: %v, want ErrUnknownUnit", err)
		}
		release()

		if err := r.Stop(t.Context(), "a"); err != nil {
			t.Fatal(err)
		}
		release = hold()
		got := make(chan control.Status, 1)
		go func() {
			st, err := r.Status(context.Background())
			if err != nil {
				t.Error(err)
			}
			got <- st
		}()
		synctest.Wait()
		select {
		case st := <-got:
			t.Fatalf("status after a stop answered from a snapshot older than the stop: a %s", states(st)["a"])
		default:
		}
		release()
		if s := states(<-got)["a"]; s != control.StateStopped {
			t.Errorf("status after the stop: a %s, want stopped", s)
		}
	})
}

// TestStatusSnapshotAge: while Run is busy a status serves a snapshot no
// older than StatusMaxAge, counted from when Run last left idle with it
// exact; an older one waits for Run.
func TestStatusSnapshotAge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := &files{specs: map[string]units.Spec{"a": spec("a")}}
		r := runOver(t, &fakeSpawner{fail: map[string]error{}}, fs)
		synctest.Wait()
		if _, err := r.Status(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * StatusMaxAge) // idle: the snapshot stays exact
		gate := make(chan struct{})
		go r.call(context.Background(), false, func(context.Context) { <-gate })
		synctest.Wait()
		if _, err := r.Status(t.Context()); err != nil { // left idle just now: exact then
			t.Fatal(err)
		}
		time.Sleep(StatusMaxAge)
		answered := make(chan error, 1)
		go func() { _, err := r.Status(context.Background()); answered <- err }()
		synctest.Wait()
		select {
		case err := <-answered:
			t.Fatalf("a status served a snapshot StatusMaxAge old while Run was busy (err %v)", err)
		default:
		}
		close(gate)
		if err := <-answered; err != nil {
			t.Fatal(err)
		}
	})
}
