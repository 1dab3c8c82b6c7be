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
	noticed bool // guarded by mu: TakeWrapUp has returned true
}

// NewBudget starts a budget of total now. total must be positive; now nil
// takes time.Now. The wrap-up and deadline timers are armed at once.
func NewBudget(total time.Duration, now func() time.Time) *Budget {
	if now == nil {
		now = time.Now
	}
	b := &Budget{total: total, start: now(), now: now, wrapUp: make(chan struct{}), done: make(chan struct{})}
	wrap := time.Duration(float64(total) * WrapUpFraction)
	b.timers[0] = time.AfterFunc(wrap, func() { close(b.wrapUp) })
	b.timers[1] = time.AfterFunc(total, func() { close(b.done) })
	return b
}

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
// the notice into the one request that gets true.
func (b *Budget) TakeWrapUp() bool {
	select {
	case <-b.wrapUp:
	default:
		return false
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
