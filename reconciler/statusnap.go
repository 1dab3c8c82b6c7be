package reconciler

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
)

// A status is served from a snapshot of the units' rows that Run's
// goroutine builds (copy-on-write: a snapshot is never changed once
// published, and a Status copies the rows it returns), so that a status
// does not wait for the pass Run is in. With thousands of units starting,
// or reloads arriving one after another, Run is seldom idle: each pass
// visits every unit, and waiting behind it (and behind the build of every
// row on Run's goroutine) made a status take seconds.
//
// Which snapshot a Status serves:
//   - while Run is idle, one of the state it is idle in: the last one
//     when no input came since, else one Run builds at once (at the end
//     of the step that takes the status's request);
//   - while Run is busy, the last one if it is younger than StatusMaxAge;
//     Run publishes one at the end of a step every statusEvery (or ten
//     times its build's cost, when that is longer, but at least twice
//     in StatusMaxAge) while statuses are asked (statusInterest), and
//     none when nobody asks;
//   - never one older than an answer a control call got (read your
//     writes: a status asked after `hermesctl stop` returned shows the
//     unit stopped).
//
// What grows with time (uptime, a running job's duration) is computed
// when a status is served, and the RSS is read then (rssCache).

// StatusMaxAge is how old the state a status shows may be while Run is
// busy.
const StatusMaxAge = time.Second

const (
	statusEvery    = 50 * time.Millisecond // least time between snapshots published while busy
	statusInterest = 10 * time.Second      // snapshots are published while busy for this long after a status
	// statusEveryMost is the most time between snapshots published while
	// busy, whatever a build cost: a build slowed by a starved CPU (ten
	// times its cost is then seconds) must not leave the last snapshot
	// older than StatusMaxAge, or every status would wait for Run.
	statusEveryMost = StatusMaxAge / 2
)

// statusSnap is the status of every unit at the end of one of Run's
// steps, without the parts a Status reads when it serves it (supervisor,
// proxy, RSS). Never changed once published.
type statusSnap struct {
	st    control.Status     // Daemon, Units, ConfigErrors
	rel   []supervisor.Group // the groups of the released rows, in their order
	live  []liveRow          // by row: what grows with time
	ended []endedGroup       // recovery: the groups of dead owners it ended
	left  []supervisor.Group // recovery: their other groups alive, not adopted since
	step  uint64             // statusSnaps.step when built
	at    time.Time
	// exact is when Run last left idle with this snapshot showing the
	// state it was idle in (Unix nanoseconds; 0: never): the state it
	// shows is as old as that, not as old as the build. The one field
	// Run writes once the snapshot is published.
	exact atomic.Int64
}

// age is how old the state s shows is at least.
func (s *statusSnap) age() time.Duration {
	a := time.Since(s.at)
	if e := s.exact.Load(); e != 0 {
		a = min(a, time.Since(time.Unix(0, e)))
	}
	return a
}

// liveRow is what a row's uptime and its running job's duration are
// computed from when the row is served.
type liveRow struct {
	up      bool          // the row has an uptime: of id (started: when its age cannot be read)
	id      proc.Identity // the process whose age is the uptime: the main one of a forking unit, else the leader
	started time.Time
	job     time.Time // a job run still running began at job; zero: none
}

// statusSnaps is what Status and Run's goroutine share of the snapshots.
type statusSnaps struct {
	cur  atomic.Pointer[statusSnap]
	step atomic.Uint64 // Run's steps so far (Run writes, on its goroutine)
	idle atomic.Bool   // Run is waiting for input
	// seen is the highest step in which a control call was answered,
	// noted by the caller once it has the answer: a snapshot of an
	// earlier step does not show what the call did.
	seen   atomic.Uint64
	wanted atomic.Int64 // when a status was last asked, in Unix nanoseconds

	// Run's goroutine only.
	cost    time.Duration      // the last build's
	waiters []chan *statusSnap // statuses waiting for the snapshot of the end of this step
}

// answered notes, on a control caller's goroutine, that its call was
// answered: later statuses show at least the step it was answered in.
func (s *statusSnaps) answered() {
	for {
		seen, now := s.seen.Load(), s.step.Load()
		if now <= seen || s.seen.CompareAndSwap(seen, now) {
			return
		}
	}
}

// snapshot is the snapshot a Status serves (see above), built by Run's
// goroutine when none will do.
func (r *Reconciler) snapshot(ctx context.Context) (*statusSnap, error) {
	r.served.snaps.wanted.Store(time.Now().UnixNano())
	s := r.served.snaps.cur.Load()
	if s != nil && s.step >= r.served.snaps.seen.Load() {
		if s.step == r.served.snaps.step.Load() {
			return s, nil // nothing happened since
		}
		if !r.served.snaps.idle.Load() && s.age() < StatusMaxAge {
			return s, nil
		}
	}
	got := make(chan *statusSnap, 1)
	if err := r.call(ctx, false, func(context.Context) { r.served.snaps.waiters = append(r.served.snaps.waiters, got) }); err != nil {
		return nil, err
	}
	select { // built at the end of the step, after its pass (publishStatus)
	case s = <-got:
		return s, nil
	case <-r.done:
		return nil, ErrStopped
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// leftIdle notes, as Run leaves idle, that the last snapshot shows the
// state of now when no step came since it was built.
func (r *Reconciler) leftIdle() {
	if s := r.served.snaps.cur.Load(); s != nil && s.step == r.served.snaps.step.Load() {
		s.exact.Store(time.Now().UnixNano())
	}
}

// publishStatus publishes a snapshot at the end of a step: at once when
// a status waits for one; else while statuses are asked and Run is busy,
// every statusEvery, or ten times the last build's cost when that is
// longer (but no more than statusEveryMost), so that building costs Run
// at most a tenth of its time.
func (r *Reconciler) publishStatus() {
	if w := r.served.snaps.waiters; len(w) > 0 {
		s := r.buildStatus()
		for _, c := range w {
			c <- s
		}
		r.served.snaps.waiters = nil
		return
	}
	if time.Since(time.Unix(0, r.served.snaps.wanted.Load())) > statusInterest {
		return
	}
	every := min(max(statusEvery, 10*r.served.snaps.cost), statusEveryMost)
	if s := r.served.snaps.cur.Load(); s != nil && (s.step == r.served.snaps.step.Load() || time.Since(s.at) < every) {
		return
	}
	r.buildStatus()
}

// buildStatus builds the snapshot of the state now and publishes it. Run's
// goroutine.
func (r *Reconciler) buildStatus() *statusSnap {
	began := time.Now()
	s := &statusSnap{step: r.served.snaps.step.Load(), at: began, ended: r.found.ended}
	s.st, s.rel = r.status()
	for _, g := range r.found.leftovers {
		if !r.holds(g.PGID) { // adopted since (adopt --orphans): no longer a leftover
			s.left = append(s.left, g)
		}
	}
	s.live = make([]liveRow, len(s.st.Units))
	for i, u := range r.order() { // the first rows, in this order (status)
		lr := &s.live[i]
		if rn := u.run; u.state.active() {
			lr.up, lr.id, lr.started = true, rn.group.Leader, rn.started
			if !rn.main.IsZero() {
				lr.id = rn.main
			}
		}
		if j := r.jobs.m[u.spec.Name]; u.spec.IsJob() && j != nil && j.run != nil && j.run.ended.IsZero() {
			lr.job = j.run.started
		}
	}
	r.served.snaps.cost = time.Since(began)
	r.served.snaps.cur.Store(s)
	return s
}

// view is the status of s of the named units (every unit: none named),
// with what grows with time computed now; rel holds the groups of its
// released rows, in their order. An unknown name is
// control.ErrUnknownUnit, but while the first load lasts (no unit is
// known yet).
func (s *statusSnap) view(names []string) (st control.Status, rel []supervisor.Group, err error) {
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	st = s.st
	st.Units = make([]control.Unit, 0, len(s.st.Units))
	found := make(map[string]bool, len(names))
	k := 0                       // the released rows seen
	clock := proc.ReadAgeClock() // once: a reading is a system call, and thousands of rows may have an uptime
	for i, u := range s.st.Units {
		released := u.State == control.StateReleased
		if len(want) > 0 && !want[u.Name] {
			if released {
				k++
			}
			continue
		}
		found[u.Name] = true
		if released {
			rel = append(rel, s.rel[k])
			k++
		}
		lr := s.live[i]
		if lr.up {
			u.Uptime = uptimeOf(lr.id, lr.started, clock)
		}
		if !lr.job.IsZero() && u.Job != nil {
			j := *u.Job // shared with the other views of s
			j.Duration = max(time.Since(lr.job), 0)
			u.Job = &j
		}
		st.Units = append(st.Units, u)
	}
	for _, n := range names {
		if !found[n] && s.st.Loading.IsZero() { // while loading, no unit is known yet
			return control.Status{}, nil, unknownUnit(n)
		}
	}
	return st, rel, nil
}
