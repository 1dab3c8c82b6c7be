package reconciler

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-units/hermes/events"
	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
)

// eventLog keeps the events a Reconciler publishes.
type eventLog struct {
	mu sync.Mutex
	ev []events.Event
}

func (r *eventLog) publish(e events.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ev = append(r.ev, e)
}

// take returns the events so far, one line each without times, and
// forgets them.
func (r *eventLog) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.ev {
		out = append(out, line(e))
	}
	r.ev = nil
	return out
}

func line(e events.Event) string {
	s := e.Kind.String() + " " + e.Unit
	switch e.Kind {
	case events.UnitState:
		s += fmt.Sprintf(" %s→%s %q", e.From, e.State, e.Reason)
	case events.UnitRestart:
		s += fmt.Sprintf(" #%d %s %q", e.Restarts, e.Cause, e.Reason)
	case events.Reload:
		s += e.Outcome
		if e.Plan != nil {
			s += fmt.Sprintf(" start%v stop%v restart%v keep%v", e.Plan.Start, e.Plan.Stop, e.Plan.Restart, e.Plan.Keep)
		}
	case events.ConfigError:
		s += e.Error.File + ": " + e.Error.Message
	}
	return s
}

// startPublishing is start with a eventLog on Options.Publish.
func startPublishing(t *testing.T, specs ...units.Spec) (*harness, *eventLog) {
	t.Helper()
	rec := &eventLog{}
	h := newHarness(t, specs...)
	o := h.options(units.RoleGateway)
	o.Publish = rec.publish
	h.run(New(o))
	return h, rec
}

func TestPublishedEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, rec := startPublishing(t,
			spec("db", func(s *units.Spec) { s.Restart = units.RestartOnFailure }),
			spec("web", func(s *units.Spec) { s.After = []string{"db"} }))
		synctest.Wait()
		check(t, "start", rec.take(), []string{
			`unit.state db inactive→running ""`,
			`unit.ready db`,
			`unit.state web inactive→running ""`,
			`unit.ready web`,
		})

		h.fs.last(t, "db").exit(&supervisor.ExitError{Code: -1, Signal: syscall.SIGKILL})
		synctest.Wait()
		check(t, "kill", rec.take(), []string{
			`unit.state db running→stopping "killed by signal killed"`,
			`unit.restart db #1 signal "killed by signal killed"`,
			`unit.state db stopping→failed "killed by signal killed; restarting in 1.05s"`,
		})
		time.Sleep(1100 * time.Millisecond)
		synctest.Wait()
		check(t, "restart", rec.take(), []string{
			`unit.state db failed→running ""`,
			`unit.ready db`,
		})

		h.mu.Lock()
		h.specs = []units.Spec{h.specs[0], spec("api")}
		h.errs = []*units.Error{{File: "/u/bad.yaml", Line: 3, Column: 1, Msg: "unknown key"}}
		h.mu.Unlock()
		if _, err := h.r.Reload(t.Context(), false); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		check(t, "reload", rec.take(), []string{
			`reload applied start[api] stop[web] restart[] keep[db]`,
			`config.error /u/bad.yaml: unknown key`,
			`unit.state api inactive→starting "waiting for web to stop (reload)"`,
			`unit.state web running→stopping "removed from the units directory"`,
			`unit.state api starting→running ""`,
			`unit.ready api`,
		})
	})
}

func check(t *testing.T, step string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: events\ngot  %q\nwant %q", step, got, want)
	}
}

func TestCauseClass(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{exitCause{&supervisor.ExitError{Code: 1}}, events.CauseExit},
		{exitCause{&supervisor.ExitError{Code: -1, Signal: syscall.SIGKILL}}, events.CauseSignal},
		{exitCause{nil}, events.CauseExit},
		{errExitUnknown, events.CauseExit},
		{fmt.Errorf("%w (1s)", ErrStartTimeout), events.CauseStartTimeout},
		{fmt.Errorf("%w (1s)", ErrWatchdog), events.CauseWatchdog},
		{fmt.Errorf("%w (1s)", ErrRuntimeMax), events.CauseRuntimeMax},
		{fmt.Errorf("%w: %w", errProbe, context.DeadlineExceeded), events.CauseReadiness},
		{spawnError(units.Spec{Name: "x"}, syscall.ENOENT), events.CauseSpawn},
		{ErrBudgetExceeded, events.CauseBudget},
		{fmt.Errorf("something else"), events.CauseOther},
	} {
		t.Run(tc.want+"/"+tc.err.Error(), func(t *testing.T) {
			if got := causeClass(tc.err); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
