package ledger

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"
)

// TestUpdateReusesItsCopy: an Update hands fn a copy of every entry, and
// a write of a file of thousands of entries must not allocate that copy
// anew each time (an owner of 5000 units wrote some 2 MB of garbage per
// write, and paid for it in collections). It also must not hand fn what
// the last fn changed: each copy is made again from the file.
func TestUpdateReusesItsCopy(t *testing.T) {
	const n = 3000
	l := openTemp(t)
	ctx := t.Context()
	batch := make([]Entry, n)
	for i := range batch {
		batch[i] = selfEntry(t, fmt.Sprint("u", i))
	}
	if err := l.Add(ctx, batch...); err != nil {
		t.Fatal(err)
	}
	mark := func(k int) {
		t.Helper()
		if err := l.Update(ctx, func(es []Entry) ([]Entry, error) {
			es[k%len(es)].State = Released
			return es, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	mark(0) // the buffers grow to the file's size once
	const writes = 10
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for k := 1; k <= writes; k++ {
		mark(k)
	}
	runtime.ReadMemStats(&after)
	per := (after.TotalAlloc - before.TotalAlloc) / writes
	// A copy of the entries is some 250 bytes each; what is left is the
	// snapshot of the file read (a pointer and a line each) and the
	// prune's reads.
	if perEntry := per / n; perEntry > 100 {
		t.Errorf("an Update of a %d-entry file allocated %d bytes (%d an entry), want under 100 an entry: the copy handed to fn is allocated anew", n, per, perEntry)
	}
	t.Logf("%d bytes allocated an Update of %d entries", per, n)

	// What fn changes, in place and inside Argv, is not what the next fn
	// is given when the first one's write failed.
	boom := errors.New("refused")
	if err := l.Update(ctx, func(es []Entry) ([]Entry, error) {
		es[0].Argv[0], es[1].Unit = "changed", "changed"
		return es[:1], boom
	}); !errors.Is(err, boom) {
		t.Fatalf("Update: %v, want fn's error", err)
	}
	if err := l.Update(ctx, func(es []Entry) ([]Entry, error) {
		if len(es) != n || es[0].Argv[0] != "sleep" || es[1].Unit != "u1" {
			t.Errorf("after a refused fn, the next one was given %d entries, the first argv %q, the second unit %q; want %d, sleep, u1", len(es), es[0].Argv, es[1].Unit, n)
		}
		return es, nil
	}); err != nil {
		t.Fatal(err)
	}
	es, err := l.Entries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != n || !slices.Equal(es[0].Argv, []string{"sleep", "1"}) {
		t.Errorf("the file holds %d entries, the first argv %q; want %d, [sleep 1]", len(es), es[0].Argv, n)
	}
}
