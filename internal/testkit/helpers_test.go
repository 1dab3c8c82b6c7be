package testkit

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
)

// TestLines: lines added from many goroutines are all kept, each
// goroutine's in its order; All is a copy; Matching keeps the lines that
// hold its string.
func TestLines(t *testing.T) {
	var l Lines
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				l.Logf("g%d line %d", g, i)
			}
		})
	}
	wg.Wait()
	all := l.All()
	if len(all) != 200 {
		t.Fatalf("got %d lines, want 200", len(all))
	}
	all[0] = "changed"
	if l.All()[0] == "changed" {
		t.Error("All returned the lines themselves, want a copy")
	}
	got := l.Matching("g2 ")
	want := make([]string, 50)
	for i := range want {
		want[i] = fmt.Sprintf("g2 line %d", i)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Matching(g2) = %q, want %q", got, want)
	}
}

// TestPipe: what is written to the write end is read from the read end,
// and both ends are closed when the test ends.
func TestPipe(t *testing.T) {
	var r, w *os.File
	t.Run("pipe", func(t *testing.T) {
		r, w = Pipe(t)
		if _, err := w.WriteString("x"); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 1)
		if _, err := r.Read(b); err != nil || b[0] != 'x' {
			t.Fatalf("read %q, %v; want x", b, err)
		}
	})
	for _, f := range []*os.File{r, w} {
		if err := f.Close(); !errors.Is(err, os.ErrClosed) {
			t.Errorf("Close after the test: %v, want os.ErrClosed (closed at cleanup)", err)
		}
	}
}
