package reconciler

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
)

// slowSpawn is a fakeSpawner whose spawns take d each (the ledger write of
// a real spawn), on the synctest clock.
type slowSpawn struct {
	*fakeSpawner
	d time.Duration
}

func (s slowSpawn) Spawn(ctx context.Context, sp supervisor.Spec) (Process, error) {
	time.Sleep(s.d)
	return s.fakeSpawner.Spawn(ctx, sp)
}

// TestStartBudget starts many slow units at once and asks for status in
// the middle: status is answered between passes, not after every spawn,
// and every unit still starts, with READY once all have had their chance.
func TestStartBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 20
		var specs []units.Spec
		for i := range n {
			specs = append(specs, spec(fmt.Sprintf("u%02d", i)))
		}
		fs := &fakeSpawner{fail: map[string]error{}}
		var mu sync.Mutex
		ready := -1
		r, err := New(Options{
			Spawner: slowSpawn{fs, StartBudget / 2}, StateDir: t.TempDir(), Env: []string{"PATH=/bin"},
			Rand: func() float64 { return 0.5 },
			Load: func(context.Context) (Loaded, error) { return Loaded{Specs: specs}, nil },
			OnReady: func(n int) {
				mu.Lock()
				ready = n
				mu.Unlock()
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		runInTest(t, r)
		synctest.Wait() // Run is in its first spawn

		st, err := r.Status(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		running, queued := 0, 0
		for _, u := range st.Units {
			switch {
			case u.State == "running":
				running++
			case u.Error == waitQueued:
				queued++
			}
		}
		if running == 0 || running >= n || running+queued != n {
			t.Errorf("status during the starts: got %d running and %d queued, want some of each, %d in all", running, queued, n)
		}
		mu.Lock()
		if ready != -1 {
			t.Errorf("READY sent with %d running before every unit had its chance to start", ready)
		}
		mu.Unlock()

		time.Sleep(n * StartBudget) // the synctest clock: every spawn done
		synctest.Wait()
		st, err = r.Status(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range st.Units {
			if u.State != "running" {
				t.Errorf("unit %s: got %s (%s), want running", u.Name, u.State, u.Error)
			}
		}
		mu.Lock()
		if ready != n {
			t.Errorf("got READY with %d running, want %d", ready, n)
		}
		mu.Unlock()
	})
}
