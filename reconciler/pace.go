package reconciler

import "time"

// StartBudget bounds the time one reconcile pass spends starting units. A
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

// pace is what the start budget keeps from one pass to the next. Owned
// by Run's goroutine.
type pace struct {
	more  bool  // the last pass ran out of its start budget: another follows at once
	asked *unit // the unit a caller waits to see started (Start, Restart): exempt from the budget
	// passes counts the passes run: each looks at every unit, so that
	// their number is what a start or stop of many units costs beyond
	// its spawns and signals (tests count it).
	passes int
}

// startPass counts one reconcile pass's starts.
type startPass struct {
	began   time.Time
	started int
}

// allows reports whether the pass may start one more unit.
func (p startPass) allows() bool {
	return p.started == 0 || time.Since(p.began) < StartBudget
}
