package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/internal/safefile"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/reconciler"
	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/timeouts"
	"github.com/hermes-units/hermes/units"
)

// `hermesctl run --run-budget SECONDS` gives an ad-hoc run the budget
// rules of a job (reconciler/jobs.go): the child gets HERMES_RUN_ID,
// HERMES_RUN_DEADLINE and HERMES_WRAPUP_FILE; at 80 % of the budget the
// notice is written to that file and --wrapup-signal (none by default, as
// a job's wrapup_signal) is sent to the child; at 100 % the child's group
// is stopped (TERM, then KILL after --grace) and hermesctl exits
// exitcode.HermesctlBudget (timeout(1)'s status). When hermesd serves the
// provider proxy the run is registered with it for as long as it lasts
// (control.RunRegistrar), so that the child's calls, through its own
// OPENAI_BASE_URL, are budgeted and get the same notice; without hermesd,
// or with its proxy off, the local rules apply alone.

// maxRunBudget is the largest --run-budget a time.Duration holds.
const maxRunBudget = math.MaxInt64 / float64(time.Second)

// runBudget is what --run-budget and --wrapup-signal ask for; the zero
// value is a run without a budget.
type runBudget struct {
	total  time.Duration
	signal units.Signal // 0: none
}

// parseRunBudget checks the flags: seconds (given: --run-budget was set)
// must be positive, and a wrap-up signal needs a budget. Errors are usage
// errors.
func parseRunBudget(seconds float64, given bool, signal string) (runBudget, error) {
	var rb runBudget
	if given {
		if !(seconds > 0) || seconds > maxRunBudget {
			return rb, &exitError{code: exitcode.Usage, err: fmt.Errorf("run: --run-budget %v: give a positive number of seconds", seconds)}
		}
		rb.total = time.Duration(seconds * float64(time.Second))
	}
	if signal == "" {
		return rb, nil
	}
	if !given {
		return rb, &exitError{code: exitcode.Usage, err: errors.New("run: --wrapup-signal is sent at 80% of --run-budget, which is not set: set both, or drop it")}
	}
	sig, err := units.ParseSignal(signal)
	if err != nil {
		return rb, &exitError{code: exitcode.Usage, err: fmt.Errorf("run: --wrapup-signal: %w", err)}
	}
	rb.signal = sig
	return rb, nil
}

// watchBudget applies b's rules to a child until done is closed: wrapUp
// once at b's wrap-up point (80 %), then stop once at its deadline; each
// is skipped once done is closed. It returns whether stop was called,
// after stop has returned. It blocks; its only clock is b's timers, so
// that under testing/synctest it runs on the bubble's.
func watchBudget(b *timeouts.Budget, done <-chan struct{}, wrapUp, stop func()) (stopped bool) {
	for _, step := range []struct {
		at <-chan struct{}
		do func()
	}{{b.WrapUp(), wrapUp}, {b.Done(), stop}} {
		select {
		case <-step.at:
		case <-done:
			return false
		}
		select {
		case <-done: // exited as the moment came: nothing to do
			return false
		default:
		}
		step.do()
	}
	return true
}

// budgetedRun is one `hermesctl run` with a budget: its clock, started
// before the child, its notice and file, and its registration with the
// proxy.
type budgetedRun struct {
	id       string
	budget   *timeouts.Budget
	signal   units.Signal
	notice   string
	wrapFile string
	env      []string // the child's run and proxy variables
	release  func()   // ends the proxy's registration; nil when none
	socket   string   // hermesd's control socket, to end the run (cut)
}

// startRun starts the budget clock of a run of argv, and registers it with
// the proxy of the hermesd on g's socket when that serves one. env is the
// child's environment so far: an OPENAI_BASE_URL it sets is kept (its
// calls may still name the run in header X-Hermes-Run-Id). A proxy that
// is on but refuses the run is said on stderr; the local rules apply
// anyway.
func startRun(ctx context.Context, g *globals, env, argv []string, rb runBudget) *budgetedRun {
	r := &budgetedRun{budget: timeouts.NewBudget(rb.total, nil), signal: rb.signal}
	r.notice = wrapUpNotice(argv, r.budget)
	var proxyVars []string
	if st, ok := proxyStatus(ctx, g); ok {
		spent := r.budget.Elapsed()
		reg, release, err := registerRun(ctx, g, control.RunRequest{Budget: r.budget.Total(), Spent: spent, WrapUp: r.notice})
		base := "http://" + st.Listen + "/v1"
		if err != nil {
			fmt.Fprintf(os.Stderr, "hermesctl run: the provider proxy does not budget this run's calls (%v); its local budget applies\n", err)
		} else {
			r.id, r.release, r.socket, base = reg.ID, release, g.Socket, reg.BaseURL
			// The proxy's clock started spent into the run when the
			// request reached it, at most now: this clock restarts from
			// the same point now, so that its wrap-up signal (and TERM)
			// never come before the proxy's, which would then not put the
			// notice in the call the signal prompts.
			r.budget.Stop()
			r.budget = timeouts.ResumeBudget(r.budget.Total(), spent, nil)
		}
		proxyVars = proxyChildEnv(g, env, base)
	}
	if r.id == "" {
		r.id = "run-" + time.Now().UTC().Format("20060102T150405Z") + "-" + strings.ToLower(rand.Text()[:8])
	}
	// Absolute: the child reads HERMES_WRAPUP_FILE from its own working directory.
	r.wrapFile = reconciler.WrapUpFile(absPath(g.State), r.id)
	r.env = append([]string{
		reconciler.EnvRunID + "=" + r.id,
		reconciler.EnvRunDeadline + "=" + r.budget.Deadline().Format(time.RFC3339),
		reconciler.EnvWrapupFile + "=" + r.wrapFile,
	}, proxyVars...)
	return r
}

// registerRun registers the run with the hermesd on g's socket. Its
// answer must come within registerWait; the registration then lasts until
// release, or until ctx ends.
func registerRun(ctx context.Context, g *globals, req control.RunRequest) (control.RunRegistration, func(), error) {
	c, err := dial(g)
	if err != nil {
		return control.RunRegistration{}, nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	late := time.AfterFunc(registerWait, cancel)
	reg, release, err := c.RegisterRun(rctx, req)
	if !late.Stop() { // rctx is cancelled: a registration made is ending
		if err == nil {
			release()
		}
		err = fmt.Errorf("hermesd did not answer within %s", registerWait)
	}
	if err != nil {
		cancel()
		c.Close()
		return reg, nil, err
	}
	return reg, func() { release(); cancel(); c.Close() }, nil
}

// registerWait bounds hermesd's answer to a run's registration.
const registerWait = 2 * time.Second

// wrapUpNotice is the run's notice, as a job's (reconciler.WrapUpNotice)
// words it: in the file, and injected by the proxy.
func wrapUpNotice(argv []string, b *timeouts.Budget) string {
	total := b.Total()
	remain := total - time.Duration(float64(total)*timeouts.WrapUpFraction)
	return fmt.Sprintf("hermes: this run (hermesctl run %s) has used 80%% of its run budget of %s; %s remain, until %s. "+
		"Wrap up now: finish or save your work, report, and exit. At the deadline it is stopped and marked %q.\n",
		filepath.Base(argv[0]), total, remain.Round(time.Millisecond), b.Deadline().Format(time.RFC3339), reconciler.ResultBudgetExceeded)
}

// wrapUp gives the run its one notice: the file, then the signal to the
// child's leader, unless it has exited. Failures are said on stderr.
func (r *budgetedRun) wrapUp(child *supervisor.Child) {
	err := os.MkdirAll(filepath.Dir(r.wrapFile), 0o700)
	if err == nil {
		err = safefile.WriteFile(r.wrapFile, []byte(r.notice), 0o600)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "hermesctl run: wrap-up notice not written to %s: %v\n", r.wrapFile, err)
	}
	if r.signal == 0 {
		return
	}
	err = proc.SignalChild(child.Leader.PID, child.Done(), r.signal.Syscall())
	if err != nil && !errors.Is(err, proc.ErrReaped) { // a leader that has exited gets nothing
		fmt.Fprintf(os.Stderr, "hermesctl run: --wrapup-signal %s not sent: %v\n", r.signal, err)
	}
}

// exceeded is the error of a run stopped at its deadline.
func (r *budgetedRun) exceeded(argv []string, grace time.Duration) error {
	return &exitError{code: exitcode.HermesctlBudget, err: fmt.Errorf("run: %w: %s (run %s) used its whole run budget of %s and was stopped (TERM, then KILL after %s); give it a larger --run-budget if it needs longer",
		reconciler.ErrBudgetExceeded, filepath.Base(argv[0]), r.id, r.budget.Total(), grace)}
}

// cut ends the run's registration with the proxy and waits, within
// registerWait, until hermesd has cut its calls in flight: at the
// deadline, before the TERM, so that the child is not stopped while
// blocked in a call the budget should already have ended. The proxy's own
// clock cuts them at the same deadline, a transit time earlier; cut makes
// the order hold whatever either clock's timer is late by. A failure is
// said on stderr, and the stop goes on.
func (r *budgetedRun) cut(errOut io.Writer) {
	if r.release == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), registerWait)
	defer cancel()
	c, err := control.Dial(r.socket)
	if err == nil {
		_, err = c.EndRun(ctx, r.id)
		c.Close()
	}
	if err != nil {
		fmt.Fprintf(errOut, "hermesctl run: the provider proxy was not told that run %s ended (%v); its calls end at the proxy's own deadline\n", r.id, err)
	}
}

// end releases the run: the proxy's registration (cutting its calls in
// flight), the clock's timers, the notice file.
func (r *budgetedRun) end() {
	if r.release != nil {
		r.release()
	}
	r.budget.Stop()
	os.Remove(r.wrapFile)
}
