package watch

import (
	"context"
	"sync"
	"time"
)

// debouncer turns changes into notifications on out. A change whose end an
// event marks (a rename into the directory, a close after writing) is
// notified at once by notify; a change no event completes (a write still
// open, a removal that may be the first half of a swap, any change on a
// kernel that reports no close) is notified by trigger once no other came
// for quiet. A burst that never goes quiet is still reported every maxWait,
// so a busy writer cannot postpone reloads forever.
//
// It is separate from the event loop so that its clock can be tested in a
// testing/synctest bubble: it uses only timers from package time.
type debouncer struct {
	quiet   time.Duration
	maxWait time.Duration
	out     chan struct{} // buffered 1: a pending notification, coalescing
	wake    chan struct{} // buffered 1: run has news in dirty or ended

	mu    sync.Mutex
	dirty bool // a change waiting for the quiet period came since run last looked; guarded by mu
	ended bool // notify covered every change before it since run last looked; guarded by mu
}

func newDebouncer(quiet time.Duration) *debouncer {
	return &debouncer{
		quiet:   quiet,
		maxWait: 20 * quiet,
		out:     make(chan struct{}, 1),
		wake:    make(chan struct{}, 1),
	}
}

// trigger records a change that is notified when the burst goes quiet. It
// never blocks.
func (d *debouncer) trigger() {
	d.mu.Lock()
	d.dirty = true
	d.mu.Unlock()
	d.poke()
}

// notify sends a notification now, for every change recorded so far: a
// burst waiting for its quiet period is covered by it and ends. A change
// triggered afterwards starts a new burst. It never blocks; a notification
// nobody has read yet absorbs it.
func (d *debouncer) notify() {
	d.mu.Lock()
	d.dirty, d.ended = false, true
	d.mu.Unlock()
	d.send()
	d.poke()
}

func (d *debouncer) send() {
	select {
	case d.out <- struct{}{}:
	default:
	}
}

func (d *debouncer) poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// run owns the timers; it returns when ctx ends.
func (d *debouncer) run(ctx context.Context) {
	quiet := time.NewTimer(d.quiet)
	quiet.Stop()
	deadline := time.NewTimer(d.maxWait)
	deadline.Stop()
	defer quiet.Stop()
	defer deadline.Stop()
	pending := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
			d.mu.Lock()
			dirty, ended := d.dirty, d.ended
			d.dirty, d.ended = false, false
			d.mu.Unlock()
			if ended {
				quiet.Stop()
				deadline.Stop()
				pending = false
			}
			if dirty {
				quiet.Reset(d.quiet)
				if !pending {
					pending = true
					deadline.Reset(d.maxWait)
				}
			}
			continue
		case <-quiet.C:
		case <-deadline.C:
		}
		// Go 1.23+ timers: Stop and Reset discard a pending tick, so the
		// other timer cannot fire late for this burst.
		quiet.Stop()
		deadline.Stop()
		pending = false
		d.send()
	}
}
