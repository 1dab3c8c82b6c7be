package watch

import (
	"context"
	"time"
)

// debouncer turns bursts of triggers into single notifications. A burst ends
// when no trigger came for quiet; a burst that never goes quiet is still
// reported every maxWait, so a busy writer cannot postpone reloads forever.
//
// It is separate from the fsnotify loop so that its clock can be tested in a
// testing/synctest bubble: it uses only timers from package time.
type debouncer struct {
	quiet   time.Duration
	maxWait time.Duration
	in      chan struct{} // buffered 1: a pending trigger, coalescing
	out     chan struct{} // buffered 1: a pending notification, coalescing
}

func newDebouncer(quiet time.Duration) *debouncer {
	return &debouncer{
		quiet:   quiet,
		maxWait: 20 * quiet,
		in:      make(chan struct{}, 1),
		out:     make(chan struct{}, 1),
	}
}

// trigger records that something happened. It never blocks.
func (d *debouncer) trigger() {
	select {
	case d.in <- struct{}{}:
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
		case <-d.in:
			quiet.Reset(d.quiet)
			if !pending {
				pending = true
				deadline.Reset(d.maxWait)
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
		select {
		case d.out <- struct{}{}:
		default:
		}
	}
}
