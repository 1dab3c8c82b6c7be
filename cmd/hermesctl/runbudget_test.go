package main

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/timeouts"
	"github.com/hermes-units/hermes/units"
)

// TestWatchBudget: on the budget's clock (a synctest bubble's), the wrap-up
// comes at 80 % and the stop at 100 %, each once, and neither after the
// child has exited; watchBudget returns once the stop has returned.
func TestWatchBudget(t *testing.T) {
	const budget, grace = 10 * time.Second, 3 * time.Second
	const never = time.Duration(-1)
	tests := []struct {
		name        string
		exitAt      time.Duration // the child exits by itself; never: only the stop ends it
		wantWrap    time.Duration // never: no wrap-up
		wantStop    time.Duration // never: no stop
		wantReturn  time.Duration
		wantStopped bool
	}{
		{name: "runs past its budget", exitAt: never, wantWrap: 8 * time.Second, wantStop: budget, wantReturn: budget + grace, wantStopped: true},
		{name: "exits before the wrap-up", exitAt: 5 * time.Second, wantWrap: never, wantStop: never, wantReturn: 5 * time.Second},
		{name: "exits after the wrap-up", exitAt: 9 * time.Second, wantWrap: 8 * time.Second, wantStop: never, wantReturn: 9 * time.Second},
		{name: "exits a moment before the deadline", exitAt: budget - time.Millisecond, wantWrap: 8 * time.Second, wantStop: never, wantReturn: budget - time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				b := timeouts.NewBudget(budget, nil)
				defer b.Stop()
				done := make(chan struct{})
				if tt.exitAt != never {
					time.AfterFunc(tt.exitAt, func() { close(done) })
				}
				wrapAt, stopAt, wraps, stops := never, never, 0, 0
				stopped := watchBudget(b, done,
					func() { wrapAt, wraps = time.Since(start), wraps+1 },
					func() {
						stopAt, stops = time.Since(start), stops+1
						time.Sleep(grace) // TERM ignored: KILL after the grace
						close(done)
					})
				if got := time.Since(start); got != tt.wantReturn {
					t.Errorf("returned after %v, want %v", got, tt.wantReturn)
				}
				if stopped != tt.wantStopped {
					t.Errorf("got stopped %v, want %v", stopped, tt.wantStopped)
				}
				if wrapAt != tt.wantWrap || wraps > 1 {
					t.Errorf("wrap-up at %v (%d times), want at %v, at most once", wrapAt, wraps, tt.wantWrap)
				}
				if stopAt != tt.wantStop || stops > 1 {
					t.Errorf("stop at %v (%d times), want at %v, at most once", stopAt, stops, tt.wantStop)
				}
			})
		})
	}
}

// TestParseRunBudget: --run-budget takes positive seconds, and
// --wrapup-signal a signal, only with a budget; errors are usage errors.
func TestParseRunBudget(t *testing.T) {
	tests := []struct {
		name    string
		seconds float64
		given   bool
		signal  string
		want    runBudget
		err     string
	}{
		{name: "none", want: runBudget{}},
		{name: "seconds", seconds: 2, given: true, want: runBudget{total: 2 * time.Second}},
		{name: "fraction", seconds: 0.5, given: true, signal: "usr1", want: runBudget{total: 500 * time.Millisecond, signal: units.Signal(syscall.SIGUSR1)}},
		{name: "zero", seconds: 0, given: true, err: "run: --run-budget 0: give a positive number of seconds"},
		{name: "negative", seconds: -3, given: true, err: "run: --run-budget -3: give a positive number of seconds"},
		{name: "too long", seconds: 1e300, given: true, err: "give a positive number of seconds"},
		{name: "signal without budget", signal: "USR1", err: "run: --wrapup-signal is sent at 80% of --run-budget, which is not set: set both, or drop it"},
		{name: "unknown signal", seconds: 1, given: true, signal: "NOPE", err: `run: --wrapup-signal: unknown signal "NOPE"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseRunBudget(tt.seconds, tt.given, tt.signal)
			if tt.err == "" {
				if err != nil || got != tt.want {
					t.Errorf("got %+v, %v; want %+v", got, err, tt.want)
				}
				return
			}
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != exitcode.Usage || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("got %v, want a usage error saying %q", err, tt.err)
			}
		})
	}
}
