package proxy

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/hermes-units/hermes/timeouts"
)

// Registered runs (a job's run, a `hermesctl run --run-budget`): their
// calls resolve with the run's remaining budget and get its wrap-up notice
// once. At the run's deadline the proxy ends the run's calls in flight by
// itself, from the run's own clock, so that a child blocked in a call is
// free before its stop signal comes (which its owner sends at the same
// deadline or later). Once the run ends, the proxy remembers it for
// RunMemory: its later calls are refused with 410, run_budget_exceeded
// when it had spent its budget, run_ended when it ended earlier; after
// that, a call naming it gets 404 unknown_run.

// RunMemory is how long the proxy remembers a run after its end.
const RunMemory = time.Hour

// maxEndedRuns bounds the ended runs remembered: past it, the oldest is
// forgotten before its RunMemory is out.
const maxEndedRuns = 4096

// run is a registered run: its budget clock, wrap-up notice, and the calls
// it has in flight (cut at its deadline, and when it is unregistered).
type run struct {
	budget *timeouts.Budget
	wrapup string
	calls  map[*context.CancelCauseFunc]struct{} // guarded by Proxy.mu
	// unwatch cancels the cut at the deadline (Budget.AtDeadline); nil
	// for a run without a budget.
	unwatch func() bool
}

// endedRun is what the proxy keeps of a run that ended.
type endedRun struct {
	at       time.Time // when it was unregistered
	spent    bool      // its budget was spent then
	total    time.Duration
	deadline time.Time
}

// endedRuns are the runs ended less than RunMemory ago, at most
// maxEndedRuns of them.
type endedRuns struct {
	m     map[string]endedRun
	order []endedID // by end, oldest first; an id ended again (or registered again) since is stale here
}

type endedID struct {
	id string
	at time.Time
}

func (e *endedRuns) add(id string, er endedRun) {
	e.m[id] = er
	e.order = append(e.order, endedID{id, er.at})
	e.prune(er.at)
}

// prune forgets the runs ended RunMemory before now, and the oldest past
// maxEndedRuns.
func (e *endedRuns) prune(now time.Time) {
	n := 0
	for n < len(e.order) && (now.Sub(e.order[n].at) > RunMemory || len(e.order)-n > maxEndedRuns) {
		o := e.order[n]
		if er, ok := e.m[o.id]; ok && er.at.Equal(o.at) {
			delete(e.m, o.id)
		}
		n++
	}
	if n > 0 {
		e.order = append(e.order[:0:0], e.order[n:]...)
	}
}

// lookup is the ended run id, if it ended within RunMemory of now.
func (e *endedRuns) lookup(id string, now time.Time) (endedRun, bool) {
	e.prune(now)
	er, ok := e.m[id]
	return er, ok
}

// RegisterRun makes runID's requests (path prefix /run/<runID>/v1, or
// header X-Hermes-Run-Id) resolve with budget's remaining time, and injects
// wrapup (if not empty) once into the first model request after the
// budget's wrap-up point. At budget's deadline the run's calls in flight
// are cut (HTTP 410, or an SSE error event, code run_budget_exceeded), and
// later ones refused the same way. The caller (hermesd's job runner) owns
// budget: it calls UnregisterRun when the run ends, then budget.Stop. A
// nil budget registers a run without one (its calls resolve like any
// other). Registering an id again replaces its budget and notice.
func (p *Proxy) RegisterRun(runID string, budget *timeouts.Budget, wrapup string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := &run{budget: budget, wrapup: wrapup, calls: map[*context.CancelCauseFunc]struct{}{}}
	if old, ok := p.runs[runID]; ok {
		r.calls = old.calls
		if old.unwatch != nil {
			old.unwatch()
		}
	}
	delete(p.ended.m, runID)
	p.runs[runID] = r
	if budget != nil {
		r.unwatch = budget.AtDeadline(func() { p.spend(runID, r) })
	}
}

// spend cuts the calls in flight of r, registered as runID, at its
// deadline.
func (p *Proxy) spend(runID string, r *run) {
	p.mu.Lock()
	if p.runs[runID] != r {
		p.mu.Unlock()
		return
	}
	calls := r.cancels()
	p.mu.Unlock()
	cause := spentError(runID, r.budget)
	for _, c := range calls {
		c(cause)
	}
}

// cancels lists r's calls in flight; p.mu is held.
func (r *run) cancels() []context.CancelCauseFunc {
	calls := make([]context.CancelCauseFunc, 0, len(r.calls))
	for c := range r.calls {
		calls = append(calls, *c)
	}
	return calls
}

// spentError is the cause a spent run's calls are cut with: it wraps
// timeouts.ErrBudgetSpent.
func spentError(runID string, b *timeouts.Budget) error {
	return fmt.Errorf("run %q reached its deadline %s (run budget %s): %w",
		runID, b.Deadline().UTC().Format(time.RFC3339), b.Total(), timeouts.ErrBudgetSpent)
}

// UnregisterRun forgets runID and cuts its calls in flight (cause
// ErrRunEnded, or the budget's error when it is spent): the run is over,
// nobody reads their answers. Later requests for it fail with HTTP 410
// for RunMemory, then 404 (see RegisterRun).
func (p *Proxy) UnregisterRun(runID string) {
	p.mu.Lock()
	r, ok := p.runs[runID]
	if !ok {
		p.mu.Unlock()
		return
	}
	delete(p.runs, runID)
	if r.unwatch != nil {
		r.unwatch()
	}
	er := endedRun{at: p.opts.Now()}
	if r.budget != nil {
		er.spent, er.total, er.deadline = r.budget.Run().Exhausted(), r.budget.Total(), r.budget.Deadline()
	}
	p.ended.add(runID, er)
	calls := r.cancels()
	p.mu.Unlock()
	var cause error = ErrRunEnded
	if er.spent {
		cause = spentError(runID, r.budget)
	}
	for _, c := range calls {
		c(cause)
	}
}

// attach records a call of run id; detach undoes it.
func (p *Proxy) attach(id string, cancel *context.CancelCauseFunc) (*run, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.runs[id]
	if ok {
		r.calls[cancel] = struct{}{}
	}
	return r, ok
}

func (p *Proxy) detach(r *run, cancel *context.CancelCauseFunc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(r.calls, cancel)
}

// refusedRun is the answer to a call of run id, which is not registered:
// 410 for a run that ended within RunMemory (run_budget_exceeded when its
// budget was spent), 404 unknown_run for a run the proxy does not know.
func (p *Proxy) refusedRun(id string) *apiError {
	p.mu.Lock()
	er, ok := p.ended.lookup(id, p.opts.Now())
	p.mu.Unlock()
	switch {
	case ok && er.spent:
		return budgetSpent(id, er.total, er.deadline, ", and the run has ended", "")
	case ok:
		return badRequest(http.StatusGone, "run_ended", fmt.Sprintf("run %q ended at %s", id, er.at.UTC().Format(time.RFC3339)), "its calls are refused").final()
	}
	return badRequest(http.StatusNotFound, "unknown_run", fmt.Sprintf("run %q is not registered with this hermesd", id),
		fmt.Sprintf("it ended more than %s ago (the proxy remembers an ended run that long), or this base URL belongs to another hermesd", RunMemory)).final()
}

// budgetSpent refuses a call of run id, whose budget of total ran out at
// deadline: the run is over, so the call is refused, not timed out.
func budgetSpent(id string, total time.Duration, deadline time.Time, ended, todo string) *apiError {
	detail := "this call is refused, not timed out"
	if todo != "" {
		detail += "; " + todo
	}
	return newError(http.StatusGone, "hermes_budget_error", timeouts.BudgetErrorCode,
		fmt.Sprintf("run %q: %v (run budget %s, deadline %s)%s", id, timeouts.ErrBudgetSpent, total, deadline.UTC().Format(time.RFC3339), ended), detail).final()
}
