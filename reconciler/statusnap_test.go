package reconciler

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
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
		if st, ok := testkit.Ready(got); ok {
			t.Fatalf("status after a stop answered from a snapshot older than the stop: a %s", states(st)["a"])
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
		heldUntil(t, gate, "a status served a snapshot StatusMaxAge old while Run was busy", func() error {
			_, err := r.Status(context.Background())
			return err
		})
	})
}

// TestStatusSnapshotSlowBuild: while Run is busy step after step and
// statuses are asked, it publishes a snapshot at least every
// statusEveryMost, however long its last build took, so that no status
// waits for Run.
func TestStatusSnapshotSlowBuild(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := &files{specs: map[string]units.Spec{"a": spec("a")}}
		r := runOver(t, &fakeSpawner{fail: map[string]error{}}, fs)
		synctest.Wait()
		if _, err := r.Status(t.Context()); err != nil {
			t.Fatal(err)
		}
		// As a build on a starved CPU: ten times it is twenty seconds.
		if err := r.call(t.Context(), false, func(context.Context) { r.served.snaps.cost = 2 * time.Second }); err != nil {
			t.Fatal(err)
		}
		const step = 100 * time.Millisecond
		for i := range int(3 * StatusMaxAge / step) {
			held, ran := make(chan struct{}), make(chan error, 1)
			go func() {
				ran <- r.call(context.Background(), false, func(context.Context) { close(held); time.Sleep(step) })
			}()
			<-held
			answered := make(chan error, 1)
			go func() { _, err := r.Status(context.Background()); answered <- err }()
			synctest.Wait()
			select {
			case err := <-answered:
				if err != nil {
					t.Fatal(err)
				}
			default:
				t.Fatalf("after %v of busy steps, a status waited for Run", time.Duration(i)*step)
			}
			if err := <-ran; err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestStatusWhileFirstLoad: while the first read of the units directory
// lasts (a slow filesystem), a status is answered at once, with no unit
// and since when the read began, and naming a unit is no error; once the
// read is applied, the units show and the loading mark is gone.
func TestStatusWhileFirstLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := &files{specs: map[string]units.Spec{"a": spec("a")}}
		gate := make(chan struct{})
		r, err := New(Options{Spawner: &fakeSpawner{fail: map[string]error{}}, StateDir: t.TempDir(), Env: []string{"PATH=/bin"}, Rand: func() float64 { return 0.5 },
			Load: func(ctx context.Context) (Loaded, error) {
				select {
				case <-gate:
				case <-ctx.Done():
				}
				return fs.load(ctx)
			}})
		if err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		runInTest(t, r)
		synctest.Wait()
		time.Sleep(5 * time.Second)           // the read is slow
		st, err := r.Status(t.Context(), "a") // deadlocks if it waits for the read
		if err != nil {
			t.Fatalf("status naming a unit while the units are read: %v", err)
		}
		if len(st.Units) != 0 || !st.Loading.Equal(began) {
			t.Errorf("status while the units are read: %d units, loading since %v; want none, since %v", len(st.Units), st.Loading, began)
		}
		close(gate)
		synctest.Wait()
		st, err = r.Status(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Units) != 1 || st.Units[0].State != control.StateRunning || !st.Loading.IsZero() {
			t.Errorf("status once the units are read: %+v, loading since %v; want a running, no loading mark", st.Units, st.Loading)
		}
	})
}

// TestStopWhileFirstLoad: a stop asked while the first read of the units
// directory is stuck (a filesystem that stopped answering, deaf to the
// context) ends Run at once, cleanly, with no unit started.
func TestStopWhileFirstLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		defer close(gate) // the read left behind ends with the test
		sp := &fakeSpawner{fail: map[string]error{}}
		r, err := New(Options{Spawner: sp, StateDir: t.TempDir(), Env: []string{"PATH=/bin"}, Rand: func() float64 { return 0.5 },
			Load: func(context.Context) (Loaded, error) {
				<-gate
				return Loaded{Specs: copies([]units.Spec{spec("a")})}, nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		stop := runInTest(t, r)
		synctest.Wait()
		done := make(chan error, 1)
		go func() { done <- stop() }()
		synctest.Wait()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run stopped during the first read: %v, want a clean stop", err)
			}
		default:
			t.Fatal("Run did not stop while its first read was stuck")
		}
		sp.mu.Lock()
		defer sp.mu.Unlock()
		if n := len(sp.spawns); n != 0 {
			t.Errorf("%d units started", n)
		}
	})
}

// TestStatusBeforeRun: a status asked before Run has begun is answered at
// once: no unit, loading since the reconciler was made. hermesd's control
// socket serves before Run's goroutine may have run (on a loaded machine,
// it had not), and such a status used to wait for Run, which was reading
// the units directory first: on a filesystem that stopped answering, it
// waited for ever.
func TestStatusBeforeRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := &files{specs: map[string]units.Spec{"a": spec("a")}}
		began := time.Now()
		r, err := New(Options{Spawner: &fakeSpawner{fail: map[string]error{}}, StateDir: t.TempDir(), Env: []string{"PATH=/bin"}, Rand: func() float64 { return 0.5 }, Load: fs.load})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		st, err := r.Status(ctx, "a")
		if err != nil {
			t.Fatalf("status before Run: %v", err)
		}
		if len(st.Units) != 0 || !st.Loading.Equal(began) {
			t.Errorf("status before Run: %d units, loading since %v; want none, since %v", len(st.Units), st.Loading, began)
		}
		runInTest(t, r)
		synctest.Wait()
		st, err = r.Status(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Units) != 1 || !st.Loading.IsZero() {
			t.Errorf("status once Run has loaded: %d units, loading since %v; want one, no loading mark", len(st.Units), st.Loading)
		}
	})
}
