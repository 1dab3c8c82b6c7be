package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/events"
	"github.com/hermes-units/hermes/units"
)

// Waiting for the outcome of a start or a restart (`hermesctl start`,
// `restart`). hermesd answers a start once the unit is started, not ready;
// the outcome comes later, as events. So the command subscribes to the
// event stream before it sends the start (no event of the outcome is then
// missed), and after the answer and after each event about the unit (or a
// unit it waits for) reads the unit's status, which decides (judge): ready
// or running, done for a oneshot, the run's end for a job; failed, exited
// or stopped instead. The events only say when to look.
//
// hermesd enforces the unit's timeouts itself: a unit not ready within
// timeouts.start is stopped and failed, and the wait ends with that error.
// The wait's own bound, the unit's timeouts plus waitMargin from its spawn
// (bound), only guards against a daemon that stops reporting. While a
// unit waits for the units it starts after, the wait has no bound of its
// own (those units' timeouts bound them), but it ends as soon as one of
// them is failed, stopped or exited (stuck). --timeout bounds it all.

// waitMargin is what the wait allows past the unit's own timeouts: the
// stop that follows a timeout, and a loaded machine.
const waitMargin = 10 * time.Second

// feed is the command's subscription to the event stream: the events
// received and not yet taken, and a signal when more come. The stream's
// goroutine (follow) is its only writer.
type feed struct {
	mu   sync.Mutex
	evs  []events.Event // guarded by mu
	err  error          // guarded by mu: why the stream ended
	kick chan struct{}  // 1-buffered: something was added, or the stream ended
	done chan struct{}  // closed once the stream has ended (err set)
}

// subscribe follows c's event stream until ctx ends, and returns once
// hermesd has subscribed it (what it publishes from then on is on it).
// The caller ends ctx and then waits for f.done.
func subscribe(ctx context.Context, c *control.Client) (*feed, error) {
	f := &feed{kick: make(chan struct{}, 1), done: make(chan struct{})}
	opened := make(chan struct{})
	go func() {
		defer close(f.done)
		err := c.Events(ctx, control.EventOptions{Follow: true, NoHistory: true, Opened: func() { close(opened) }},
			func(e events.Event) error {
				f.mu.Lock()
				f.evs = append(f.evs, e)
				f.mu.Unlock()
				f.signal()
				return nil
			})
		if err == nil {
			err = errors.New("hermesd ended the event stream (is it stopping?)")
		}
		f.mu.Lock()
		f.err = err
		f.mu.Unlock()
		f.signal()
	}()
	select {
	case <-opened:
		return f, nil
	case <-f.done:
		return nil, f.ended()
	}
}

func (f *feed) signal() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// take returns the events received since the last take.
func (f *feed) take() []events.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	evs := f.evs
	f.evs = nil
	return evs
}

// ended is why the stream ended; nil while it goes on.
func (f *feed) ended() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// watch is one unit's wait: what the action answered, and what the unit
// was before it.
type watch struct {
	unit     string
	res      control.ActionResult
	prior    *control.Job // a job's state before the action; nil for a unit that is no job
	restarts int          // the unit's restarts once the action was answered
	began    time.Time    // when the action was sent
}

// verdict is judge's reading of one status.
type verdict struct {
	done    bool   // the wait is over; err says how
	err     error  // the unit failed (a *unitFailed), when done
	doing   string // what the unit is doing now, while not done
	reached string // what it reached, when done without err: "ready: tcp …", "running", "done", "run …: success"
}

// unitFailed is the outcome of a start that did not come about: the
// unit's state, the daemon's words for why, and where to look next.
type unitFailed struct {
	unit, state, why, hint string
}

func (e *unitFailed) Error() string {
	s := e.state + ": " + e.why
	if e.hint != "" {
		s += "; " + e.hint
	}
	return s
}

// failed is the verdict on u when it failed: its status error, else why.
func failed(u control.Unit, why string) verdict {
	return failedAs(u, string(u.State), why)
}

// failedAs is failed, in state: "failed" for a run that failed and was
// replaced by another (u's own state is then the new run's).
func failedAs(u control.Unit, state, why string) verdict {
	if u.Error != "" {
		why = u.Error
	}
	return verdict{done: true, err: &unitFailed{unit: u.Name, state: state, why: why, hint: "its log: `hermesctl logs " + u.Name + "`"}}
}

// judge reads where u is against what w waits for. deps holds the units
// u waits for (after: and requires:, transitively), read with it, when
// u is waiting for them; nil otherwise.
func judge(w *watch, u control.Unit, deps map[string]control.Unit) verdict {
	if u.Job != nil {
		return judgeRun(w, u, deps)
	}
	if u.Restarts > w.restarts {
		// The run the action started failed, and the restart policy
		// started another; status keeps the failure's error.
		return failedAs(u, "failed", "failed, and restarted")
	}
	switch u.State {
	case control.StateRunning:
		if u.Probe != "" {
			return verdict{done: true, reached: "ready: " + u.Probe}
		}
		return verdict{done: true, reached: "running"}
	case control.StateDone:
		return verdict{done: true, reached: "done"}
	case control.StateExited:
		if u.Probe != "" {
			return failed(u, "exited with status 0 before it was ready ("+u.Probe+")")
		}
		return failed(u, "exited with status 0")
	case control.StateFailed:
		return failed(u, "failed")
	case control.StateInactive, control.StateStopped, control.StateDisabled:
		return failed(u, "stopped before it was ready")
	case control.StateStarting:
		if u.PGID == 0 {
			return waiting(u, deps)
		}
		return verdict{doing: starting(u)}
	}
	return verdict{doing: string(u.State)}
}

// judgeRun is judge for a job: the wait is for the run the action began
// (w.res.RunID), or when it began none (the job waits for the units it
// starts after) for the first run after w.prior's.
func judgeRun(w *watch, u control.Unit, deps map[string]control.Unit) verdict {
	j := u.Job
	target := w.res.RunID
	if target == "" {
		if j.RunID == "" || (w.prior != nil && j.RunID == w.prior.RunID) {
			switch {
			case u.State == control.StateFailed:
				return failed(u, "failed before its run began")
			case u.State == control.StateStarting && u.PGID == 0:
				return waiting(u, deps)
			}
			return verdict{doing: "waiting for its run to begin"}
		}
		target = j.RunID
	}
	if j.RunID != target {
		return failedAs(u, "failed", fmt.Sprintf("run %s ended, and run %s began", target, j.RunID))
	}
	switch j.Result {
	case control.ResultSuccess:
		return verdict{done: true, reached: "run " + target + ": success"}
	case control.ResultRunning, "":
		return verdict{doing: "run " + target + " running"}
	}
	return failed(u, "run "+target+": "+string(j.Result))
}

// waiting is the verdict on u, not started yet: it waits for other units
// (its status error says which). The wait is over when one of those, or
// one they wait for, is failed, stopped or exited: none of them starts
// again by itself, so neither does u.
func waiting(u control.Unit, deps map[string]control.Unit) verdict {
	if why, d := stuck(u, deps, map[string]bool{u.Name: true}); why != "" {
		return verdict{done: true, err: &unitFailed{unit: u.Name, state: "not started", why: why,
			hint: "fix " + d + ", or start it: `hermesctl start " + d + "`"}}
	}
	if u.Error != "" {
		return verdict{doing: u.Error}
	}
	return verdict{doing: "waiting"}
}

// stuck says why u will not start by itself, "waits for api, which waits
// for db, which is failed: …", and names the unit at the end of that
// chain; "" when no unit u waits for is failed, at rest (inactive,
// stopped, disabled) or exited.
func stuck(u control.Unit, deps map[string]control.Unit, seen map[string]bool) (why, end string) {
	for _, n := range slices.Concat(u.After, u.Requires) {
		d, ok := deps[n]
		if !ok || seen[n] {
			continue
		}
		seen[n] = true
		switch d.State {
		case control.StateFailed, control.StateInactive, control.StateStopped, control.StateDisabled, control.StateExited:
			why := "waits for " + n + ", which is " + string(d.State)
			if d.Error != "" {
				why += ": " + d.Error
			}
			return why, n
		case control.StateStarting:
			if d.PGID != 0 {
				continue
			}
			if why, end := stuck(d, deps, seen); why != "" {
				return "waits for " + n + ", which " + why, end
			}
		}
	}
	return "", ""
}

// starting says what a spawned unit that is not ready yet waits for.
func starting(u control.Unit) string {
	switch {
	case u.Type == units.Oneshot:
		return "running, until it exits"
	case u.Probe != "":
		return "starting, probe " + u.Probe
	case u.Type == units.Forking:
		return "starting, until its main process is found"
	}
	return "starting"
}

// bound is when the wait for u gives up on hermesd (read: when u was
// read), and in words why then; zero when u is not spawned yet or has no
// timeout that ends its start.
func bound(u control.Unit, read time.Time) (time.Time, string) {
	t := u.Timeouts
	if t == nil || u.PGID == 0 {
		return time.Time{}, ""
	}
	spawned := read.Add(-u.Uptime)
	var limit time.Duration
	var what string
	switch {
	case u.Job != nil && !u.Job.Deadline.IsZero():
		return u.Job.Deadline.Add(t.Stop + waitMargin), "its run budget"
	case u.Type == units.Oneshot || u.Job != nil:
		limit, what = t.RuntimeMax, "its runtime_max"
	default:
		limit, what = t.Start, "its start timeout"
	}
	if limit <= 0 {
		return time.Time{}, ""
	}
	return spawned.Add(limit + t.Stop + waitMargin), fmt.Sprintf("%s of %v", what, limit)
}

// waiter waits for the outcomes of one command's actions on one feed.
type waiter struct {
	c    *control.Client
	feed *feed
	show *progress
}

// wait waits until judge says w's unit is done, and returns what it
// reached, or its failure (a *unitFailed), the feed's end, or ctx's.
func (wt *waiter) wait(ctx context.Context, w *watch) (string, error) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	timer.Stop()
	var ticks <-chan time.Time
	if wt.show.tty {
		tk := time.NewTicker(100 * time.Millisecond)
		defer tk.Stop()
		ticks = tk.C
	}
	defer wt.show.clear()
	watching := map[string]bool{w.unit: true}
	first := true
	for {
		u, deps, err := wt.read(ctx, w)
		if err != nil {
			return "", err
		}
		if first {
			w.restarts, first = u.Restarts, false
		}
		v := judge(w, u, deps)
		if v.done {
			return v.reached, v.err
		}
		wt.show.set(w.unit, v.doing, w.began)
		watching = map[string]bool{w.unit: true}
		for n := range deps {
			watching[n] = true
		}
		giveUp, why := bound(u, time.Now())
		timer.Stop()
		if !giveUp.IsZero() {
			timer.Reset(time.Until(giveUp))
		}
	next:
		for {
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-timer.C:
				return "", fmt.Errorf("no outcome within %s and a margin of %v (still %s); hermesd may still be at it: see `hermesctl status %s`", why, waitMargin, v.doing, w.unit)
			case <-ticks:
				wt.show.draw()
			case <-wt.feed.kick:
				if err := wt.feed.ended(); err != nil {
					return "", fmt.Errorf("lost hermesd's event stream while waiting (%w); see `hermesctl status %s`", err, w.unit)
				}
				for _, e := range wt.feed.take() {
					if e.Unit != "" && watching[e.Unit] {
						break next
					}
				}
			}
		}
	}
}

// read is w's unit's status, and when it waits for other units theirs
// (the whole status: what it waits for may wait in turn).
func (wt *waiter) read(ctx context.Context, w *watch) (control.Unit, map[string]control.Unit, error) {
	st, err := wt.c.Status(ctx, w.unit)
	if err != nil {
		return control.Unit{}, nil, err
	}
	u, ok := unitIn(st, w.unit)
	if !ok {
		return control.Unit{}, nil, fmt.Errorf("unit %s: %w", w.unit, control.ErrUnknownUnit)
	}
	if u.State != control.StateStarting || u.PGID != 0 {
		return u, nil, nil
	}
	if st, err = wt.c.Status(ctx); err != nil {
		return control.Unit{}, nil, err
	}
	deps := map[string]control.Unit{}
	for _, d := range st.Units {
		if d.Name != w.unit && d.State != control.StateReleased {
			deps[d.Name] = d
		}
	}
	return u, deps, nil
}

// unitIn is the row of the unit name in st (not a released group's).
func unitIn(st control.Status, name string) (control.Unit, bool) {
	for _, u := range st.Units {
		if u.Name == name && u.State != control.StateReleased {
			return u, true
		}
	}
	return control.Unit{}, false
}

// elapsed is d for a human, in tenths of a second.
func elapsed(d time.Duration) string {
	return fmt.Sprintf("%.1fs", d.Seconds())
}
