package supervisor

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-units/hermes/ledger"
)

// TestJournalGathers: records nobody waits for are written at once by an
// idle journal; after a write, those that come are gathered for
// gatherTimes as long as that write took, and go in one write; an op
// whose caller waits is written at once, gathering or not. Each write here
// takes 30 ms (fake time).
func TestJournalGathers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const took = 30 * time.Millisecond
		var mu sync.Mutex
		var writes []int // entries added by each write
		j := makeJournal(t.Context(), nil, t.Logf)
		j.update = func(_ context.Context, fn func([]ledger.Entry) ([]ledger.Entry, error)) error {
			es, err := fn(nil)
			mu.Lock()
			writes = append(writes, len(es))
			mu.Unlock()
			time.Sleep(took)
			return err
		}
		got := func() []int {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(writes)
		}
		go j.run()
		defer j.close()
		add := func(es []ledger.Entry) []ledger.Entry { return append(es, ledger.Entry{}) }

		j.post(add) // idle: written at once, until 30 ms
		synctest.Wait()
		if w := got(); !slices.Equal(w, []int{1}) {
			t.Fatalf("writes after the first record: got %v, want [1] (an idle journal writes at once)", w)
		}
		for range 20 { // at 0, 5, ... 95 ms: the first write ends at 30, the gathering at 120
			j.post(add)
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond)
		if w := got(); !slices.Equal(w, []int{1, 20}) {
			t.Errorf("writes of a burst of records: got %v, want [1 20] (the twenty gathered into one write)", w)
		}

		j.post(add) // idle again: written at once, until 30 ms from now; gathering until 120
		time.Sleep(took)
		start := time.Now()
		if err := j.do(t.Context(), add); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != took {
			t.Errorf("an op whose caller waits, queued while records gather: done after %v, want %v (written at once)", d, took)
		}
	})
}
