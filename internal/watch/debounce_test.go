package watch

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// startDebouncer runs a debouncer inside the current synctest bubble and
// joins it at the end of the test.
func startDebouncer(t *testing.T, quiet time.Duration) *debouncer {
	t.Helper()
	d := newDebouncer(quiet)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return d
}

// notifications counts the values waiting on out, consuming them.
func notifications(d *debouncer) int {
	n := 0
	for {
		select {
		case <-d.out:
			n++
		default:
			return n
		}
	}
}

func TestDebounceBurst(t *testing.T) {
	tests := []struct {
		name    string
		events  int
		spacing time.Duration
	}{
		{"one event", 1, 0},
		{"100 events at once", 100, 0},
		{"100 events within one window", 100, 400 * time.Microsecond},
		{"100 events, each within the window of the previous", 100, 9 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const quiet = 50 * time.Millisecond
				d := startDebouncer(t, quiet)
				for range tt.events {
					d.trigger()
					time.Sleep(tt.spacing)
					synctest.Wait()
					if n := notifications(d); n != 0 {
						t.Fatalf("%d notifications during the burst, want none", n)
					}
				}
				time.Sleep(quiet)
				synctest.Wait()
				if n := notifications(d); n != 1 {
					t.Errorf("got %d notifications after the burst, want 1", n)
				}
				time.Sleep(10 * quiet)
				synctest.Wait()
				if n := notifications(d); n != 0 {
					t.Errorf("got %d more notifications later, want 0", n)
				}
			})
		})
	}
}

func TestDebounceQuietEndsBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const quiet = 50 * time.Millisecond
		d := startDebouncer(t, quiet)
		d.trigger()
		time.Sleep(quiet - time.Millisecond)
		synctest.Wait()
		if n := notifications(d); n != 0 {
			t.Fatalf("got %d notifications before the quiet time passed, want 0", n)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if n := notifications(d); n != 1 {
			t.Fatalf("got %d notifications when the quiet time passed, want 1", n)
		}
		// A second burst, after the first was reported, is reported too.
		d.trigger()
		time.Sleep(quiet)
		synctest.Wait()
		if n := notifications(d); n != 1 {
			t.Errorf("got %d notifications for the second burst, want 1", n)
		}
	})
}

func TestDebounceCoalescesUnread(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const quiet = 50 * time.Millisecond
		d := startDebouncer(t, quiet)
		for range 3 { // three bursts nobody reads in between
			d.trigger()
			time.Sleep(2 * quiet)
		}
		synctest.Wait()
		if n := notifications(d); n != 1 {
			t.Errorf("got %d pending notifications, want 1 (coalesced)", n)
		}
	})
}

func TestDebounceMaxWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const quiet = 50 * time.Millisecond
		d := startDebouncer(t, quiet)
		// A writer that never pauses for the quiet time is still reported
		// once per maxWait (20 × quiet = 1s).
		got := 0
		for range 200 { // 2s of events every 10ms
			d.trigger()
			time.Sleep(10 * time.Millisecond)
			synctest.Wait()
			got += notifications(d)
		}
		if got != 2 {
			t.Errorf("got %d notifications in 2s of continuous events, want 2", got)
		}
	})
}

// notify sends at once and ends the burst it covers: the quiet timer of
// triggers before it does not fire again; a trigger after it starts a new
// burst.
func TestDebounceNotifyEndsBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const quiet = 50 * time.Millisecond
		d := startDebouncer(t, quiet)
		d.trigger()
		time.Sleep(quiet / 2)
		d.notify()
		synctest.Wait()
		if n := notifications(d); n != 1 {
			t.Fatalf("got %d notifications right after notify, want 1", n)
		}
		time.Sleep(10 * quiet)
		synctest.Wait()
		if n := notifications(d); n != 0 {
			t.Fatalf("got %d notifications after the covered burst's quiet time, want 0", n)
		}
		d.notify()
		d.trigger()
		synctest.Wait()
		if n := notifications(d); n != 1 {
			t.Fatalf("got %d notifications right after notify, want 1", n)
		}
		time.Sleep(quiet)
		synctest.Wait()
		if n := notifications(d); n != 1 {
			t.Errorf("got %d notifications for the trigger after notify, want 1", n)
		}
	})
}
