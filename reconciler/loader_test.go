package reconciler

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/hermes-units/hermes/units"
)

// TestStatusDuringLoad holds a reload's read of the units directory and
// asks for status meanwhile: the read runs off Run's goroutine, so status
// answers (with the running version), and once the read completes the
// edit is applied.
func TestStatusDuringLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := &fakeSpawner{fail: map[string]error{}}
		gate := make(chan struct{})
		changes := make(chan struct{}, 1)
		var mu sync.Mutex
		loads := 0
		r, err := New(Options{
			Spawner: fs, StateDir: t.TempDir(), Env: []string{"PATH=/bin"}, Rand: func() float64 { return 0.5 },
			Changes: changes,
			Load: func(ctx context.Context) (Loaded, error) {
				mu.Lock()
				loads++
				n := loads
				mu.Unlock()
				arg := "old"
				if n > 1 {
					<-gate // a slow read of the directory
					arg = "new"
				}
				return Loaded{Specs: copies([]units.Spec{spec("a", func(s *units.Spec) { s.Command = []string{"/bin/sleep", arg} })})}, nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		runInTest(t, r)
		synctest.Wait()
		changes <- struct{}{}
		synctest.Wait() // the reload is reading, held at the gate

		st, err := r.Status(t.Context(), "a")
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Units[0].State; got != "running" {
			t.Errorf("status during the read: got %s, want running", got)
		}
		close(gate)
		synctest.Wait()
		last := fs.lastArgv(t)
		if !slices.Equal(last, []string{"/bin/sleep", "new"}) {
			t.Errorf("got %q running after the reload, want the new version", last)
		}
	})
}

// TestChangesLoadOnlyChanged: a change notified (Options.Changes) is read
// with LoadChanges, the load that looks only at what changed; the first
// load and a reload asked for (Reload) read with Load, which looks at
// everything.
func TestChangesLoadOnlyChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var calls []string
		loader := func(kind string) func(context.Context) (Loaded, error) {
			return func(context.Context) (Loaded, error) {
				mu.Lock()
				calls = append(calls, kind)
				mu.Unlock()
				return Loaded{Specs: copies([]units.Spec{spec("a")})}, nil
			}
		}
		changes := make(chan struct{}, 1)
		o := fakeOptions(t, &fakeSpawner{fail: map[string]error{}}, loader("all"))
		o.Changes, o.LoadChanges = changes, loader("changes")
		r := mustNew(t, o)
		runInTest(t, r)
		synctest.Wait()
		changes <- struct{}{}
		synctest.Wait()
		reloadNow(t, r)
		mu.Lock()
		defer mu.Unlock()
		if want := []string{"all", "changes", "all"}; !slices.Equal(calls, want) {
			t.Errorf("loads: %v, want %v", calls, want)
		}
	})
}
