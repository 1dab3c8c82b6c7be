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

// after lets the bubble's clock run for dur, waits until the debouncer is
// idle, and checks how many notifications are waiting then (consuming
// them); when says when, for the message.
func after(t *testing.T, d *debouncer, dur time.Duration, want int, when string) {
	t.Helper()
	time.Sleep(dur)
	synctest.Wait()
	if n := notifications(d); n != want {
		t.Fatalf("got %d notifications %s, want %d", n, when, want)
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
					after(t, d, tt.spacing, 0, "during the burst")
				}
				after(t, d, quiet, 1, "after the burst")
				after(t, d, 10*quiet, 0, "later")
			})
		})
	}
}

func TestDebounceQuietEndsBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const quiet = 50 * time.Millisecond
		d := startDebouncer(t, quiet)
		d.trigger()
		after(t, d, quiet-time.Millisecond, 0, "before the quiet time passed")
		after(t, d, time.Millisecond, 1, "when the quiet time passed")
		// A second burst, after the first was reported, is reported too.
		d.trigger()
		after(t, d, quiet, 1, "for the second burst")
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
		after(t, d, 0, 1, "right after notify")
		after(t, d, 10*quiet, 0, "after the covered burst's quiet time")
		d.notify()
		d.trigger()
		after(t, d, 0, 1, "right after notify")
		after(t, d, quiet, 1, "for the trigger after notify")
	})
}
