package timeouts

import (
	"sync"
	"time"
)

// WrapUpFraction is when a run gets its one wrap-up notice: at 80 % of the
// budget (SPEC §9).
const WrapUpFraction = 0.8

// Budget is the clock of one run with a budget (agent.run_budget_seconds, or
// a job's run_budget_seconds): elapsed and remaining time, the one-shot
// wrap-up notice at 80 %, and the deadline at 100 %.
//
// The owner creates it when the run starts and calls Stop when the run ends,
// which releases its timers. WrapUp and Done are closed by timers of the
// time package; under testing/synctest they follow the bubble's fake clock.
// Safe for concurrent use.
type Budget struct {
	total time.Duration
	start time.Time
	now   func() time.Time

	wrapUp  chan struct{}
	done    chan struct{}
	timers  [2]*time.Timer
	mu      sync.Mutex
	noticed bool           // guarded by mu: TakeWrapUp has returned true
	expired bool           // guarded by mu: done is closed
	atDone  map[int]func() // guarded by mu: AtDeadline's functions still to run
	nextAt  int            // guarded by mu
}

// NewBudget starts a budget of total now. total must be positive; now nil
// takes time.Now. The wrap-up and deadline timers are armed at once.
func NewBudget(total time.Duration, now func() time.Time) *Budget {
	return ResumeBudget(total, 0, now)
}

// ResumeBudget is a budget of total of which spent has elapsed already
// (another process's clock of the same run, measured as it asked): it
// started spent ago. spent is clamped to [0, total].
func ResumeBudget(total, spent time.Duration, now func() time.Time) *Budget {
	if now == nil {
		now = time.Now
	}
	spent = min(max(spent, 0), total)
	b := &Budget{total: total, start: now().Add(-spent), now: now, wrapUp: make(chan struct{}), done: make(chan struct{})}
	b.timers[0] = time.AfterFunc(max(b.wrapPoint()-spent, 0), func() { close(b.wrapUp) })
	b.timers[1] = time.AfterFunc(total-spent, b.expire)
	return b
}

// expire closes Done, then runs the functions AtDeadline was given.
func (b *Budget) expire() {
	b.mu.Lock()
	close(b.done)
	b.expired = true
	fs := b.atDone
	b.atDone = nil
	b.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// AtDeadline arranges for f to run once the deadline has come: on the
// timer's goroutine right after Done is closed, or on a goroutine of its
// own at once when it has come already. No goroutine waits meanwhile.
// cancel undoes it and reports whether f was still to run. A Budget
// stopped before its deadline never runs f.
func (b *Budget) AtDeadline(f func()) (cancel func() bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.expired {
		go f()
		return func() bool { return false }
	}
	if b.atDone == nil {
		b.atDone = map[int]func(){}
	}
	id := b.nextAt
	b.nextAt++
	b.atDone[id] = f
	return func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		_, ok := b.atDone[id]
		delete(b.atDone, id)
		return ok
	}
}

// wrapPoint is when, into the budget, the wrap-up comes.
func (b *Budget) wrapPoint() time.Duration { return time.Duration(float64(b.total) * WrapUpFraction) }

// Total is the whole budget.
func (b *Budget) Total() time.Duration { return b.total }

// Elapsed is the time since the run started.
func (b *Budget) Elapsed() time.Duration { return b.now().Sub(b.start) }

// Remaining is the time left, never negative.
func (b *Budget) Remaining() time.Duration { return max(b.total-b.Elapsed(), 0) }

// Deadline is when the run must be stopped.
func (b *Budget) Deadline() time.Time { return b.start.Add(b.total) }

// Run snapshots the budget for Resolve.
func (b *Budget) Run() RunBudget { return RunBudget{Total: b.total, Spent: min(b.Elapsed(), b.total)} }

// WrapUp is closed once, when 80 % of the budget has elapsed: the moment to
// write the notice file or send wrapup_signal.
func (b *Budget) WrapUp() <-chan struct{} { return b.wrapUp }

// Done is closed at the deadline.
func (b *Budget) Done() <-chan struct{} { return b.done }

// TakeWrapUp returns true exactly once, on the first call after the
// wrap-up point: the proxy calls it before each model request and injects
// the notice into the one request that gets true. The point is read from
// the clock, not only from the timer that closes WrapUp, which a loaded
// machine runs late: a request that another process's clock of the run
// sent after its wrap-up gets the notice.
func (b *Budget) TakeWrapUp() bool {
	select {
	case <-b.wrapUp:
	default:
		if b.Elapsed() < b.wrapPoint() {
			return false
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.noticed {
		return false
	}
	b.noticed = true
	return true
}

// Stop releases the timers; WrapUp and Done stay as they are.
func (b *Budget) Stop() {
	for _, t := range b.timers {
		t.Stop()
	}
}
