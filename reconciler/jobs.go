package reconciler

// Jobs (SPEC §9). A unit with schedule: is a job: it is not started at load
// but at the times of its 5-field cron schedule (and by `hermesctl start`,
// a manual run). A fire does what `hermesctl start` does to an idle unit;
// a fire while the previous run is still running is skipped and logged, so
// runs never overlap. A run that exits 0 is not restarted (state exited,
// result success); a failed run is restarted per restart: on-failure within
// the start limit, like any unit; a run stopped at its budget is not.
//
// One timer serves every job: armed for the nearest fire, re-armed after
// each fire and whenever a reconcile pass sees a schedule appear, change or
// go (reload). No polling.
//
// Schedules are in wall-clock time, timers run on the monotonic clock: a
// step of the wall clock (date -s, an NTP step, a resume) makes the armed
// delay wrong. Stepped back ten minutes, a minutely job used to wait the
// ten minutes out, even once the clock was set right again. So once a job
// is declared, Options.ClockSteps watches for steps (a timerfd on Linux:
// no polling) and each step re-arms every schedule from the new time
// (onClockStep): a fire still ahead is computed again from now; a fire
// that a step forward passed over runs once, at once, and the schedule
// resumes after now (missed fires are not replayed one by one), unless
// the step only set right a clock that had gone back (the fire lies in
// time already lived: it is computed again from now). As a
// backstop when no watcher runs, a timer that fires with no job due means
// the clock went back, and re-arms the same way.
//
// Each run gets HERMES_RUN_ID, and with a budget (run_budget_seconds, or
// agent.run_budget_seconds where hermesd fills it in for jobs that set
// none) HERMES_RUN_DEADLINE and HERMES_WRAPUP_FILE; with the provider proxy
// on, OPENAI_BASE_URL and OPENAI_API_KEY (the proxy token) too, as units
// with proxy_env: true do. The budget is one timeouts.Budget per run,
// shared with the proxy (RegisterRun): at 80 % the state goroutine writes
// the notice file and sends wrapup_signal, and the proxy injects the same
// notice into the run's next model request; at 100 % the run is stopped
// (stop signal, grace, KILL) with ErrBudgetExceeded.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/safefile"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/timeouts"
	"github.com/hermes-units/hermes/units"
	"github.com/robfig/cron/v3"
)

// ErrBudgetExceeded is the cause of a run stopped at 100 % of its budget.
var ErrBudgetExceeded = errors.New("budget exceeded")

// Job results in status (control.Job.Result).
const (
	ResultSuccess        = control.ResultSuccess
	ResultFailed         = control.ResultFailed
	ResultBudgetExceeded = control.ResultBudgetExceeded
	ResultRunning        = control.ResultRunning
	ResultStopped        = control.ResultStopped
)

// Environment variables of a job's run.
const (
	EnvRunID       = "HERMES_RUN_ID"
	EnvRunDeadline = "HERMES_RUN_DEADLINE" // RFC 3339, rounded down to the second
	EnvWrapupFile  = "HERMES_WRAPUP_FILE"  // created at 80 % of the budget
	EnvOpenAIBase  = "OPENAI_BASE_URL"
	EnvOpenAIKey   = "OPENAI_API_KEY" // the proxy token, the client's API key
)

// Runs is the provider proxy's run registry as a job's run uses it
// (*proxy.Proxy implements it). The reconciler registers a run with a
// budget right before spawning it and unregisters it when the run ends.
type Runs interface {
	RegisterRun(runID string, budget *timeouts.Budget, wrapup string)
	UnregisterRun(runID string)
}

// NextFire is the first fire of s strictly after t (cron schedules have a
// resolution of one minute here: the seconds of the result are 0).
func NextFire(s cron.Schedule, t time.Time) time.Time { return s.Next(t) }

// WrapUpNotice is the text of the wrap-up notice: in the notice file, and
// injected by the proxy into the run's next model request.
func WrapUpNotice(unit, runID string, total, remaining time.Duration, deadline time.Time) string {
	return fmt.Sprintf("hermes: job %s (run %s) has used 80%% of its run budget of %s; %s remain, until %s. "+
		"Wrap up now: finish or save your work, report, and exit. At the deadline the job is stopped and marked %q.\n",
		unit, runID, total, remaining.Round(time.Second), deadline.Format(time.RFC3339), ResultBudgetExceeded)
}

type jobKind int

const (
	jobFire      jobKind = iota // the scheduler's timer: fire every job that is due
	jobWrapUp                   // a run reached 80 % of its budget
	jobDeadline                 // a run reached 100 %
	jobClockStep                // the wall clock stepped: re-arm every schedule
)

// jobEvent is a scheduler or budget event; name and gen are unset for
// jobFire and jobClockStep.
type jobEvent struct {
	name string
	gen  uint64
	kind jobKind
}

// scheduler is the job state of a Reconciler. Owned by Run's goroutine.
type scheduler struct {
	timer    *time.Timer // the one timer, armed for at; nil when no job is declared
	at       time.Time
	m        map[string]*job // by unit name
	watching bool            // the clock-step watcher runs (started with the first job)
	// seen is the latest wall time the scheduler has read: a fire that a
	// step forward passes over is caught up only if it lies after seen
	// (time never lived before), not when the clock is set right after a
	// step back.
	seen time.Time
}

// job is one job unit's schedule state.
type job struct {
	expr    string        // the schedule sched was parsed from
	sched   cron.Schedule // nil when expr does not parse (the loader refuses that)
	next    time.Time
	run     *jobRun // the latest run; nil before the first
	skipped int     // fires skipped because a run was still running
	// runs counts the runs that ended since hermesd started, by result
	// (Result*: never ResultRunning).
	runs map[control.JobResult]int
}

// jobRun is one run of a job. Its fields are set before the spawn and only
// read afterwards; end may be called from the run's watcher goroutine.
type jobRun struct {
	id       string
	started  time.Time
	budget   *timeouts.Budget // nil: no budget
	wrapFile string
	ended    time.Time // when the run ended (endJobRun); zero while it runs. Run's goroutine only.
	runs     Runs      // non-nil when registered with the proxy
	once     sync.Once
	unreg    sync.Once
}

// env is the run's part of the environment. proxyURL is the proxy's base
// ("" when off) and token its token; own is the unit's env, whose
// OPENAI_BASE_URL and OPENAI_API_KEY, if set, are the operator's choice
// and kept.
func (jr *jobRun) env(proxyURL, token string, own map[string]string) []string {
	if jr == nil {
		return nil
	}
	env := []string{EnvRunID + "=" + jr.id}
	if jr.budget != nil {
		env = append(env, EnvRunDeadline+"="+jr.budget.Deadline().Format(time.RFC3339), EnvWrapupFile+"="+jr.wrapFile)
	}
	base := ""
	if proxyURL != "" && jr.runs != nil {
		base = strings.TrimRight(proxyURL, "/") + "/run/" + url.PathEscape(jr.id) + "/v1"
	}
	return append(env, proxyVars(proxyURL, base, token, own)...)
}

// proxyEnv is the provider proxy's part of u's environment: a job's run
// variables (jobRun.env), or for a unit with proxy_env: true
// OPENAI_BASE_URL and OPENAI_API_KEY (the proxy token read now: a unit
// spawned after a rotation gets the new one).
func (r *Reconciler) proxyEnv(s units.Spec, jr *jobRun) []string {
	token := ""
	if r.opt.ProxyToken != nil {
		token = r.opt.ProxyToken()
	}
	if jr != nil {
		return jr.env(r.opt.ProxyURL, token, s.Env)
	}
	if !s.ProxyEnv {
		return nil
	}
	return proxyVars(r.opt.ProxyURL, "", token, s.Env)
}

// proxyVars are OPENAI_BASE_URL (base, else proxyURL/v1) and
// OPENAI_API_KEY (token), each unless own sets it; none when the proxy is
// off.
func proxyVars(proxyURL, base, token string, own map[string]string) []string {
	if proxyURL == "" {
		return nil
	}
	if base == "" {
		base = strings.TrimRight(proxyURL, "/") + "/v1"
	}
	var env []string
	if _, set := own[EnvOpenAIBase]; !set {
		env = append(env, EnvOpenAIBase+"="+base)
	}
	if _, set := own[EnvOpenAIKey]; !set && token != "" {
		env = append(env, EnvOpenAIKey+"="+token)
	}
	return env
}

// end releases the run: unregisters it from the proxy (cutting its calls in
// flight), stops its budget's timers and removes its notice file. Safe to
// call more than once and from any goroutine; nil-safe.
func (jr *jobRun) end() {
	if jr == nil {
		return
	}
	jr.once.Do(func() {
		jr.unregister()
		if jr.budget != nil {
			jr.budget.Stop()
			os.Remove(jr.wrapFile)
		}
	})
}

// unregister ends the run's registration with the proxy, once, cutting
// its calls in flight; the proxy refuses its later calls (410) for
// proxy.RunMemory.
func (jr *jobRun) unregister() {
	jr.unreg.Do(func() {
		if jr.runs != nil {
			jr.runs.UnregisterRun(jr.id)
		}
	})
}

// schedule brings the scheduler level with the declared units: every job
// has its parsed schedule and next fire, and the one timer is armed for the
// nearest (stopped when there is none, or hermesd is stopping). It runs at
// the start of every reconcile pass, on Run's goroutine; a schedule that
// appears or changes gets its next fire from now.
func (r *Reconciler) schedule() {
	s := &r.jobs
	if r.shut != nil {
		s.disarm() // no job runs once hermesd stops
		return
	}
	if s.m == nil {
		s.m = map[string]*job{}
	}
	for n := range s.m {
		if u := r.units[n]; u == nil || !u.spec.IsJob() {
			delete(s.m, n)
		}
	}
	now := r.wallNow()
	s.see(now)
	var first time.Time
	for _, u := range r.order() { // the cached slice: a walk of the map, every pass, cost several times more
		if !u.spec.IsJob() || u.removed() || u.external {
			continue
		}
		r.watchClock()
		j := r.jobOf(u)
		if j.expr != u.spec.Schedule {
			sc, err := units.ParseSchedule(u.spec.Schedule)
			if err != nil {
				r.log.Error("job schedule does not parse; the job runs only by `hermesctl start`", "unit", u.spec.Name, "schedule", u.spec.Schedule, "err", err)
				j.expr, j.sched, j.next = u.spec.Schedule, nil, time.Time{}
				continue
			}
			j.expr, j.sched, j.next = u.spec.Schedule, sc, NextFire(sc, now)
		}
		// A schedule with no next fire (no date matches; the loader refuses
		// those) must not hide the fires of the others.
		if j.sched != nil && !j.next.IsZero() && (first.IsZero() || j.next.Before(first)) {
			first = j.next
		}
	}
	if first.Equal(s.at) && (s.timer != nil) == !first.IsZero() {
		return
	}
	s.disarm()
	s.at = first
	if !first.IsZero() {
		s.timer = time.AfterFunc(max(first.Sub(now), 0), func() { r.post(jobEvent{kind: jobFire}) })
	}
}

// see records now as read: seen is the latest wall time read.
func (s *scheduler) see(now time.Time) {
	if now.After(s.seen) {
		s.seen = now
	}
}

// disarm stops the one timer; the next schedule arms it again.
func (s *scheduler) disarm() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.at = time.Time{}
}

// wallNow is the wall clock job schedules follow (Options.WallClock).
func (r *Reconciler) wallNow() time.Time {
	if r.opt.WallClock != nil {
		return r.opt.WallClock()
	}
	return time.Now()
}

// watchClock starts the clock-step watcher, once, when the first job is
// declared (schedule, on Run's goroutine). It lives until Run's base
// context ends; each step is a jobClockStep event. A watcher that fails
// is logged: schedules then notice a step back only when their timer
// fires (onFire).
func (r *Reconciler) watchClock() {
	if r.jobs.watching || r.opt.ClockSteps == nil || r.base == nil {
		return
	}
	r.jobs.watching = true
	ctx := r.base
	r.wg.Go(func() {
		err := r.opt.ClockSteps(ctx, func() {
			select { // never blocks the watcher past Run's end
			case r.events <- jobEvent{kind: jobClockStep}:
			case <-ctx.Done():
			}
		})
		if err != nil && ctx.Err() == nil {
			r.log.Warn("not watching the wall clock for steps; a job schedule notices a step back only when its timer fires", "err", err)
		}
	})
}

// onClockStep re-arms every schedule after a step of the wall clock: a
// fire still ahead of the new time is computed again from it (a step back
// pulls it in, instead of waiting the step out); a fire a step forward
// passed over is kept, so that it runs once at once and the schedule
// resumes after now (onFire). The reconcile pass that follows arms the
// timer.
func (r *Reconciler) onClockStep() {
	now := r.wallNow()
	r.log.Info("wall clock stepped; job schedules re-armed", "now", now.Format(time.RFC3339))
	r.rearm(now)
}

// rearm computes every schedule's next fire again from now, except a
// fire that a step forward passed over into time never read before: that
// one is kept, due, and runs once. It stops the timer for the next pass to
// arm.
func (r *Reconciler) rearm(now time.Time) {
	for _, j := range r.jobs.m {
		if j.sched != nil && (j.next.After(now) || !j.next.After(r.jobs.seen)) {
			j.next = NextFire(j.sched, now)
		}
	}
	r.jobs.see(now)
	r.jobs.disarm()
}

func (r *Reconciler) jobOf(u *unit) *job {
	if r.jobs.m == nil {
		r.jobs.m = map[string]*job{}
	}
	j := r.jobs.m[u.spec.Name]
	if j == nil {
		j = &job{}
		r.jobs.m[u.spec.Name] = j
	}
	return j
}

// onJob handles a jobEvent on Run's goroutine. Budget events of a run that
// has ended (another gen) are dropped.
func (r *Reconciler) onJob(ev jobEvent) {
	switch ev.kind {
	case jobFire:
		r.onFire()
		return
	case jobClockStep:
		r.onClockStep()
		return
	}
	u := r.units[ev.name]
	if u == nil || u.gen != ev.gen || (u.state != Starting && u.state != Running) {
		return
	}
	j := r.jobs.m[ev.name]
	if j == nil || j.run == nil || j.run.budget == nil {
		return
	}
	jr := j.run
	switch ev.kind {
	case jobWrapUp:
		r.wrapUp(u, jr)
	case jobDeadline:
		r.log.Warn("job run reached its budget; stopping it", "unit", u.spec.Name, "run", jr.id, "budget", jr.budget.Total())
		// Its calls through the proxy end before the stop signal: a job
		// blocked in one would otherwise wait in it past its grace. (The
		// proxy cuts them by itself from the same clock; this makes the
		// order certain.)
		jr.unregister()
		r.stop(u, stopFailure, fmt.Errorf("%w: run %s used its whole run budget of %s and was stopped; raise run_budget_seconds if the job needs longer",
			ErrBudgetExceeded, jr.id, jr.budget.Total()))
	}
}

// onFire fires every job that is due, in dependency order, and computes
// each one's next fire. The reconcile pass that follows starts them.
//
// A timer that fires with no job due was armed before the wall clock went
// back (no watcher saw the step): every schedule is re-armed from now, as
// a reported step would have done.
func (r *Reconciler) onFire() {
	r.jobs.timer, r.jobs.at = nil, time.Time{} // it fired; schedule re-arms
	if r.shut != nil {
		return
	}
	now := r.wallNow()
	due := false
	for _, u := range r.order() {
		j := r.jobs.m[u.spec.Name]
		if j == nil || j.sched == nil || j.next.After(now) {
			continue
		}
		due = true
		j.next = NextFire(j.sched, now)
		r.fire(u, j)
	}
	if !due {
		r.log.Debug("job timer fired with no job due: the wall clock went back; schedules re-armed", "now", now.Format(time.RFC3339))
		r.rearm(now)
	}
}

// fire wants one run of u now, as `hermesctl start` does, unless a run is
// still going (skipped: no overlap) or a reload is replacing the unit.
func (r *Reconciler) fire(u *unit, j *job) {
	switch {
	case u.stop.forReload():
		return
	case r.disabled[u.spec.Name]:
		r.log.Info("job fire skipped: the job is disabled", "unit", u.spec.Name)
		return
	case r.masked[u.spec.Name]:
		r.log.Info("job fire skipped: the job is masked", "unit", u.spec.Name)
		return
	case u.state.active():
		j.skipped++
		id := ""
		if j.run != nil {
			id = j.run.id
		}
		r.log.Warn("job fire skipped: the previous run is still running", "unit", u.spec.Name, "run", id, "skipped", j.skipped)
		return
	}
	r.log.Info("job fired", "unit", u.spec.Name, "schedule", u.spec.Schedule)
	u.enabled = true
	u.stopTimer(timerBackoff)
	u.state, u.attempt, u.err = Inactive, 0, nil
}

// beginJobRun prepares a run of u right before its spawn (Run's goroutine):
// a fresh run id, the budget clock started, and the run registered with the
// proxy. It returns nil for a unit that is no job.
func (r *Reconciler) beginJobRun(u *unit, now time.Time) *jobRun {
	if !u.spec.IsJob() {
		return nil
	}
	j := r.jobOf(u)
	jr := &jobRun{id: runID(u.spec.Name, now), started: now}
	if total := u.spec.RunBudget; total > 0 {
		jr.budget = timeouts.NewBudget(total, nil)
		jr.wrapFile = WrapUpFile(r.opt.StateDir, jr.id)
		if r.opt.Runs != nil {
			jr.runs = r.opt.Runs
			remain := total - time.Duration(float64(total)*timeouts.WrapUpFraction)
			jr.runs.RegisterRun(jr.id, jr.budget, WrapUpNotice(u.spec.Name, jr.id, total, remain, jr.budget.Deadline()))
		}
	}
	j.run = jr
	return jr
}

// resumeJobRun gives a job re-adopted from a dead hermesd's ledger its run
// back (Run's goroutine; ctx is the adopted run's context): the run began
// when its leader did (the leader's age, from its kernel start time), so
// its deadline is the one it was spawned with, and it is stopped there
// (at once when it is past); its id is the HERMES_RUN_ID it was spawned
// with when its environment can still be read, so that its calls through
// the proxy are budgeted again. A leader whose age cannot be read is
// taken to start now (logged): the run gets its whole budget again, never
// none.
func (r *Reconciler) resumeJobRun(ctx context.Context, u *unit, leader proc.Identity) {
	total := u.spec.RunBudget
	if !u.spec.IsJob() || total <= 0 {
		return
	}
	age, err := leader.Age()
	if err != nil {
		r.log.Warn("re-adopted job: its run's start not read; its budget starts again now", "unit", u.spec.Name, "pid", leader.PID, "err", err)
		age = 0
	}
	now := time.Now()
	jr := &jobRun{id: runIDOf(leader.PID), started: now.Add(-age), budget: timeouts.ResumeBudget(total, age, nil)}
	if jr.id == "" {
		jr.id = runID(u.spec.Name, jr.started)
	}
	jr.wrapFile = WrapUpFile(r.opt.StateDir, jr.id)
	if r.opt.Runs != nil {
		jr.runs = r.opt.Runs
		jr.runs.RegisterRun(jr.id, jr.budget, WrapUpNotice(u.spec.Name, jr.id, total, jr.budget.Remaining(), jr.budget.Deadline()))
	}
	r.jobOf(u).run = jr
	r.log.Info("re-adopted job keeps its run budget", "unit", u.spec.Name, "run", jr.id, "deadline", jr.budget.Deadline().Format(time.RFC3339), "remaining", jr.budget.Remaining())
	r.watchJobRun(ctx, u, jr)
}

// runIDOf is the HERMES_RUN_ID in pid's environment, "" when it cannot be
// read or is no run id hermesd would make (a unit name, a time, letters).
func runIDOf(pid int) string {
	env, err := proc.Environ(pid)
	if err != nil {
		return ""
	}
	for _, kv := range env {
		if id, ok := strings.CutPrefix(kv, EnvRunID+"="); ok && len(id) <= 256 && url.PathEscape(id) == id {
			return id
		}
	}
	return ""
}

// WrapUpFile is the notice file of run runID under the state directory
// (HERMES_WRAPUP_FILE). stateDir is absolute (hermesd makes it so at flag
// resolution): the job reads the path from its own working directory.
func WrapUpFile(stateDir, runID string) string {
	return filepath.Join(stateDir, "runs", runID+".wrapup")
}

// runID is unique per run and safe in a URL path segment: the unit name,
// the start time and random letters.
func runID(unit string, now time.Time) string {
	return unit + "-" + now.UTC().Format("20060102T150405Z") + "-" + strings.ToLower(rand.Text()[:8])
}

// watchJobRun turns the run's budget into events for Run's goroutine, and
// ends the run (jobRun.end) once ctx, the run's context, ends: the run's
// end always cancels it (run.end, or the stop's dispatch: dispatchStops).
func (r *Reconciler) watchJobRun(ctx context.Context, u *unit, jr *jobRun) {
	if jr == nil {
		return
	}
	if jr.budget == nil {
		jr.end()
		return
	}
	name, gen := u.spec.Name, u.gen
	r.wg.Go(func() {
		defer jr.end()
		for _, k := range []struct {
			c    <-chan struct{}
			kind jobKind
		}{{jr.budget.WrapUp(), jobWrapUp}, {jr.budget.Done(), jobDeadline}} {
			select {
			case <-k.c:
				select {
				case r.events <- jobEvent{name, gen, k.kind}:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
		<-ctx.Done()
	})
}

// wrapUp gives a run its one wrap-up notice: the notice file, then
// wrapup_signal to the job's main process. (The proxy injects its copy by
// itself, from the same budget.)
func (r *Reconciler) wrapUp(u *unit, jr *jobRun) {
	b := jr.budget
	text := WrapUpNotice(u.spec.Name, jr.id, b.Total(), b.Remaining(), b.Deadline())
	err := os.MkdirAll(filepath.Dir(jr.wrapFile), 0o700)
	if err == nil {
		err = safefile.WriteFile(jr.wrapFile, []byte(text), 0o600)
	}
	if err != nil {
		r.log.Error("job wrap-up notice file not written", "unit", u.spec.Name, "run", jr.id, "path", jr.wrapFile, "err", err)
	}
	r.log.Info("job run at 80% of its budget: wrap-up notice given", "unit", u.spec.Name, "run", jr.id, "file", jr.wrapFile, "remaining", b.Remaining())
	if sig := u.spec.WrapupSig; sig != 0 && u.run.proc != nil {
		if err := signalLeader(u.run.proc, sig.Syscall()); err != nil {
			r.log.Warn("wrapup_signal not sent", "unit", u.spec.Name, "signal", sig, "err", err)
		}
	}
}

// signalLeader sends sig to p's leader, our child, unless it is reaped
// (proc.SignalChild). A Process that signals by itself (tests' fakes) is
// asked to.
func signalLeader(p Process, sig syscall.Signal) error {
	if s, ok := p.(interface{ Signal(syscall.Signal) error }); ok {
		return s.Signal(sig)
	}
	return proc.SignalChild(p.Group().Leader.PID, p.Done(), sig)
}

// endJobRun counts the end of u's latest run by its result, read from
// u's state once the run's end has been applied (stopped, or a spawn that
// failed), and fixes its duration. A run is counted once; a unit that is
// no job, or whose run was counted, is left alone. Run's goroutine.
func (r *Reconciler) endJobRun(u *unit, now time.Time) {
	j := r.jobs.m[u.spec.Name]
	if !u.spec.IsJob() || j == nil || j.run == nil || !j.run.ended.IsZero() {
		return
	}
	j.run.ended = now
	if j.runs == nil {
		j.runs = map[control.JobResult]int{}
	}
	j.runs[jobResult(u)]++
}

// jobStatus is u's control.Job, nil for a unit that is no job.
func (r *Reconciler) jobStatus(u *unit) *control.Job {
	if !u.spec.IsJob() {
		return nil
	}
	cj := &control.Job{Schedule: u.spec.Schedule}
	j := r.jobs.m[u.spec.Name]
	if j == nil {
		return cj
	}
	cj.Next, cj.Skipped = j.next, j.skipped
	if len(j.runs) > 0 {
		cj.Runs = maps.Clone(j.runs)
	}
	if j.run == nil {
		return cj
	}
	cj.LastRun, cj.RunID = j.run.started.Format(time.RFC3339), j.run.id
	end := j.run.ended
	if end.IsZero() {
		end = time.Now()
	}
	cj.Duration = max(end.Sub(j.run.started), 0)
	if j.run.budget != nil {
		cj.Deadline, cj.Budget = j.run.budget.Deadline(), j.run.budget.Total()
	}
	cj.Result = jobResult(u)
	return cj
}

// jobResult is the outcome of u's latest run, read from its state.
func jobResult(u *unit) control.JobResult {
	switch u.state {
	case Starting, Running:
		return ResultRunning
	case Stopping:
		if u.stop.why == stopFailure && errors.Is(u.stop.cause, ErrBudgetExceeded) {
			return ResultBudgetExceeded
		}
		return ResultRunning
	case Exited, Done:
		return ResultSuccess // Done: a oneshot job's exit 0
	case Failed, BackingOff:
		if errors.Is(u.err, ErrBudgetExceeded) {
			return ResultBudgetExceeded
		}
		return ResultFailed
	}
	return ResultStopped
}
