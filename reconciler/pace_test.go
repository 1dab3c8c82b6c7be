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
			Load: func(context.Context) (Loaded, error) { return Loaded{Specs: copies(specs)}, nil },
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

// TestStartBudgetGrowsWithTheWalk: a pass may start units for StartBudget,
// or for walkTimes as long as the last pass took beside its starts (the
// look at every unit, which grows with their number), whichever is more;
// at least one start a pass in any case.
func TestStartBudgetGrowsWithTheWalk(t *testing.T) {
	const spawn = 3 * time.Millisecond
	for _, c := range []struct {
		walk time.Duration // the last pass, beside its starts
		want int           // starts of spawn each a pass allows
	}{
		{0, 2},                       // 5 ms: starts at 0 and 3 ms
		{time.Millisecond / 4, 2},    // 4 ms < 5 ms: the same
		{time.Millisecond, 6},        // 16 ms: starts at 0, 3, … 15 ms
		{10 * time.Millisecond, 54},  // 160 ms
		{50 * time.Millisecond, 267}, // 800 ms
	} {
		var p pace
		p.starting = 7 * spawn
		p.lap(p.starting + c.walk)
		if p.walk != c.walk {
			t.Errorf("a pass of %v with %v of starts: walk %v, want %v", p.starting+c.walk, p.starting, p.walk, c.walk)
		}
		pass, got := p.pass(), 0
		for pass.allows() {
			pass.started++
			pass.starting += spawn
			got++
		}
		if got != c.want {
			t.Errorf("after a walk of %v: %d starts of %v in a pass, want %d", c.walk, got, spawn, c.want)
		}
		// The walk's share of the next pass stays under 1/(walkTimes+1).
		if c.walk > StartBudget {
			if share := float64(c.walk) / float64(c.walk+pass.starting); share > 1.0/(walkTimes+1) {
				t.Errorf("after a walk of %v: the walk is %.0f%% of a pass, want at most %.0f%%", c.walk, share*100, 100.0/(walkTimes+1))
			}
		}
	}
}
