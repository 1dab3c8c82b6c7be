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

// TestReady: an empty channel is not ready, one holding a value gives it
// once, a closed one is ready with the zero value.
func TestReady(t *testing.T) {
	ch := make(chan int, 1)
	if v, ok := Ready(ch); ok {
		t.Errorf("empty channel: Ready = %d, true; want false", v)
	}
	ch <- 7
	if v, ok := Ready(ch); !ok || v != 7 {
		t.Errorf("after a send: Ready = %d, %v; want 7, true", v, ok)
	}
	if _, ok := Ready(ch); ok {
		t.Error("after the value was taken: Ready = true, want false")
	}
	close(ch)
	if v, ok := Ready(ch); !ok || v != 0 {
		t.Errorf("closed channel: Ready = %d, %v; want 0, true", v, ok)
	}
}
