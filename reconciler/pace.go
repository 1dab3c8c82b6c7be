package reconciler

import "time"

// StartBudget bounds the time one reconcile pass spends starting units
// (more with many units: see walkTimes). A
// reload that restarts hundreds of units would otherwise hold Run's
// goroutine for as long as all their spawns take (a few milliseconds each,
// tens on a loaded machine), and every control call, status included,
// would wait for it. Once a pass
// has started at least one unit and spent StartBudget, the units still to
// start wait (state Waiting, "queued to start"), Run handles the inputs
// already waiting, then runs the next pass at once.
//
// Exempt from the budget: a unit a caller waits for (Restart's waiters, the
// unit of a Start call), so that those calls keep their contract.
const StartBudget = 5 * time.Millisecond

const waitQueued = "queued to start: other units are starting"

// walkTimes scales the start budget with what a pass costs beside its
// starts (pace.walk): the look at every unit, the stops dispatched, what
// changed published, all of which grow with the number of units. A pass
// may go on starting units while its starts took less than walkTimes
// times the last pass's walk (or StartBudget, if that is more), so that
// the walk stays under a seventeenth of Run's time at any number of units.
// With StartBudget alone, a start of 5000 units on a loaded machine ran one
// start a pass and spent two thirds as long walking as starting; with
// four times the walk, it still ran 4501 passes for 5000 starts, each
// pass's walk, events and publication costing a third as much as its
// start. A control call waits for at most one pass (a status does not:
// it is served from a snapshot, statusnap.go), about 17 walks.
const walkTimes = 16

// pace is what the start budget keeps from one pass to the next. Owned
// by Run's goroutine.
type pace struct {
	more  bool  // the last pass ran out of its start budget: another follows at once
	asked *unit // the unit a caller waits to see started (Start, Restart): exempt from the budget
	// passes counts the passes run: each looks at every unit, so that
	// their number is what a start or stop of many units costs beyond
	// its spawns and signals (tests count it).
	passes int
	// walk is what the last pass cost beside its starts, and starting
	// what its starts took (see walkTimes).
	walk, starting time.Duration
	// readied: a pass left no start for a later one, and OnReady was
	// called (reportReady).
	readied bool
}

// pass begins a pass's count of its starts.
func (p *pace) pass() startPass {
	return startPass{budget: max(StartBudget, walkTimes*p.walk)}
}

// lap records a pass that took took in all, its starts included.
func (p *pace) lap(took time.Duration) {
	p.walk = max(took-p.starting, 0)
}

// startPass counts one reconcile pass's starts.
type startPass struct {
	budget   time.Duration // the time its starts may take
	starting time.Duration // the time they took so far
	started  int
}

// allows reports whether the pass may start one more unit.
func (p startPass) allows() bool {
	return p.started == 0 || p.starting < p.budget
}
