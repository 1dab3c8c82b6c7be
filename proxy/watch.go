package proxy

import (
	"context"
	"io"
	"sync/atomic"
	"time"

	"github.com/hermes-units/hermes/timeouts"
)

// watchdog holds the timers of one call. Each timer, when it fires, cancels
// the call's context with a *CutError (or errDrained) as the cause; the
// blocked read of the upstream body then returns, and the relay reports the
// cause. arm and disarm are called only by the goroutine that serves the
// call (the handler, including its reads of the upstream body); the timer
// callbacks only cancel, which is safe from any goroutine.
type watchdog struct {
	cut       context.CancelCauseFunc
	breaker   *timeouts.Breaker // the session's; see record
	attempt   timeouts.Attempt  // this call, as the breaker counts it
	recorded  bool              // the outcome went to breaker
	plan      timeouts.Plan
	scale     float64
	template  CutError    // everything but Layer, Value and Connected
	connected atomic.Bool // set by the transport's GotConn hook

	timers   [timeouts.Drain + 1]*time.Timer
	draining bool // bytes no longer re-arm the socket read timer
	// unfollow stops the client's request from cancelling the call (see
	// call); detached records that it did, at the terminal event.
	unfollow func() bool
	detached bool

	// For Options.Report (report.go): the call's session, when the call
	// began, and when its first content event came (zero: none yet).
	ss           *session
	began        time.Time
	firstContent time.Time
}

func (w *watchdog) duration(l timeouts.Layer) time.Duration {
	d := w.plan.Timeout(l)
	if w.scale > 0 && w.scale != 1 {
		d = time.Duration(float64(d) * w.scale)
	}
	return max(d, time.Millisecond)
}

// arm starts layer l's timer, or restarts it from now.
func (w *watchdog) arm(l timeouts.Layer) {
	if t := w.timers[l]; t != nil {
		t.Reset(w.duration(l))
		return
	}
	w.timers[l] = time.AfterFunc(w.duration(l), func() { w.fire(l) })
}

func (w *watchdog) fire(l timeouts.Layer) {
	if l == timeouts.Drain {
		w.cut(errDrained)
		return
	}
	e := w.template
	e.Layer, e.Value, e.Connected = l, w.plan.Get(l), w.connected.Load()
	w.cut(&e)
}

func (w *watchdog) disarm(l timeouts.Layer) {
	if t := w.timers[l]; t != nil {
		t.Stop()
	}
}

// stop stops every timer; a callback already running only cancels a
// context that is being torn down.
func (w *watchdog) stop() {
	for _, t := range w.timers {
		if t != nil {
			t.Stop()
		}
	}
}

// record reports the call's outcome to the session's give-up breaker,
// once: the first outcome recorded is the call's.
func (w *watchdog) record(o timeouts.Outcome) {
	if !w.recorded {
		w.recorded = true
		w.breaker.Record(w.attempt, o)
	}
}

// body wraps the upstream response body: every chunk of bytes re-arms the
// socket read timer, and the first one ends the stale non-stream wait.
type body struct {
	rc    io.ReadCloser
	w     *watchdog
	first bool
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 && !b.w.draining {
		b.w.arm(timeouts.SocketRead)
		if !b.first {
			b.first = true
			if !b.w.plan.Stream {
				b.w.disarm(timeouts.StaleNonStream)
			}
		}
	}
	return n, err
}

func (b *body) Close() error { return b.rc.Close() }
