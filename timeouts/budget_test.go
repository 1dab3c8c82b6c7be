package timeouts

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		b := NewBudget(600*time.Second, nil)
		defer b.Stop()
		if got, want := b.Deadline(), start.Add(600*time.Second); !got.Equal(want) {
			t.Errorf("Deadline = %v, want %v", got, want)
		}

		time.Sleep(479 * time.Second)
		synctest.Wait()
		if closed(b.WrapUp()) || b.TakeWrapUp() {
			t.Fatal("wrap-up before 80 % of the budget")
		}
		if got := b.Remaining(); got != 121*time.Second {
			t.Errorf("Remaining = %v, want 2m1s", got)
		}

		time.Sleep(time.Second)
		synctest.Wait()
		if !closed(b.WrapUp()) {
			t.Fatal("WrapUp not closed at 80 % of the budget")
		}
		if !b.TakeWrapUp() {
			t.Error("first TakeWrapUp after 80 % = false, want true")
		}
		if b.TakeWrapUp() {
			t.Error("second TakeWrapUp = true, want the notice once")
		}
		if closed(b.Done()) {
			t.Error("Done closed before the deadline")
		}

		// The resolver sees the same clock: 480 s spent of 600 → cap 60 s.
		if got := b.Run(); got != (RunBudget{600 * time.Second, 480 * time.Second}) {
			t.Errorf("Run = %+v", got)
		}
		if got := Resolve(Inputs{Model: "o3", Stream: true, Run: b.Run()}).Stale().Timeout; got != 60*time.Second {
			t.Errorf("stale stream at 480 s of 600 = %v, want 1m0s", got)
		}

		<-b.Done()
		if got := b.Elapsed(); got != 600*time.Second {
			t.Errorf("Done at %v, want 10m0s", got)
		}
		time.Sleep(time.Minute)
		if got := b.Remaining(); got != 0 {
			t.Errorf("Remaining after the deadline = %v, want 0", got)
		}
		if got := b.Run().Spent; got != 600*time.Second {
			t.Errorf("Run().Spent after the deadline = %v, want 10m0s", got)
		}
	})
}

// TestBudgetStop: a stopped budget fires nothing and leaves no timer.
func TestBudgetStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBudget(time.Minute, nil)
		b.Stop()
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if closed(b.WrapUp()) || closed(b.Done()) {
			t.Error("stopped budget fired")
		}
	})
}

// TestBudgetAtItsEnd: under two minutes left the cap is the 60 s minimum,
// and explain says so; a spent budget resolves (explain must describe it)
// and says that its calls are refused with the budget error.
func TestBudgetAtItsEnd(t *testing.T) {
	openai := Provider{ID: "openai", BaseURL: "https://api.openai.com/v1"}
	tests := []struct {
		name    string
		run     RunBudget
		want    time.Duration // stale stream
		spent   bool
		chain   string // in the stale stream chain
		heading string // in the plan's text
	}{
		{"30s left", Left(30 * time.Second), 60 * time.Second, false,
			"budget cap max(60s, 30s remaining / 2): 60s, the minimum: half the remaining budget (15s) is under 60s",
			"run budget: 30s remaining; implicit stale timeouts are capped at 60s, the minimum cap (half the remaining budget is 15s)"},
		{"119s left", Left(119 * time.Second), 60 * time.Second, false, "the minimum", "the minimum cap"},
		{"120s left: half is the minimum", Left(120 * time.Second), 60 * time.Second, false, "budget cap max(60s, 120s remaining / 2): 60s", "capped at half of it, 60s"},
		{"300s left", RunBudget{Total: 600 * time.Second, Spent: 300 * time.Second}, 150 * time.Second, false, "budget cap max(60s, 300s remaining / 2): 150s", "run budget: 300s remaining"},
		{"spent", Left(0), 60 * time.Second, true, "half the remaining budget (0s) is under 60s",
			"run budget spent (0s remaining): the run is over; the proxy refuses its calls at once with the budget error (run_budget_exceeded: the run's budget is spent), not a timeout"},
		{"overspent", RunBudget{Total: 600 * time.Second, Spent: 700 * time.Second}, 60 * time.Second, true, "0s remaining", "run budget spent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Resolve(Inputs{Provider: openai, Model: "gpt-4o", Stream: true, Run: tt.run})
			v := p.Get(StaleStream)
			if v.Timeout != tt.want {
				t.Errorf("stale stream = %v, want %v (%s)", v.Timeout, tt.want, v.ChainString())
			}
			if p.Spent != tt.spent || tt.run.Exhausted() != tt.spent {
				t.Errorf("Spent = %v, Exhausted = %v, want %v", p.Spent, tt.run.Exhausted(), tt.spent)
			}
			if !strings.Contains(v.ChainString(), tt.chain) {
				t.Errorf("chain %q does not say %q", v.ChainString(), tt.chain)
			}
			if !strings.Contains(p.String(), tt.heading) {
				t.Errorf("plan text does not say %q:\n%s", tt.heading, p)
			}
		})
	}
}

func TestParseRemaining(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true}, {"0s", 0, true}, {" 0.0 ", 0, true}, {"30", 30 * time.Second, true}, {"5m", 5 * time.Minute, true},
		{"-3", 0, false}, {"-1s", 0, false}, {"NaN", 0, false}, {"soon", 0, false}, {"", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseRemaining(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseRemaining(%q) = %v, %v; want %v, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseRemaining(%q): %v does not wrap ErrInvalid", tt.in, err)
		}
	}
}

// TestTakeWrapUpByTheClock: the wrap-up is taken once the budget's clock
// is past 80 %, even while the timer that closes WrapUp has not run (a
// loaded machine runs timers late; another process's clock of the same
// run may already have sent the wrap-up signal).
func TestTakeWrapUpByTheClock(t *testing.T) {
	at := time.Now()
	now := func() time.Time { return at }
	b := NewBudget(time.Hour, now)
	defer b.Stop()
	at = at.Add(47 * time.Minute)
	if b.TakeWrapUp() {
		t.Fatal("TakeWrapUp at 47 of 60 minutes = true, want false")
	}
	at = at.Add(time.Minute)
	if closed(b.WrapUp()) {
		t.Fatal("the wall-clock timer fired: the test's clock is its own")
	}
	if !b.TakeWrapUp() {
		t.Error("TakeWrapUp at 48 of 60 minutes, its timer not run = false, want true")
	}
	if b.TakeWrapUp() {
		t.Error("second TakeWrapUp = true, want the notice once")
	}
}

// TestResumeBudget: a budget resumed with time spent started that long
// ago: its wrap-up, deadline and remaining time are the run's, not a new
// budget's of what was left.
func TestResumeBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		b := ResumeBudget(100*time.Second, 30*time.Second, nil)
		defer b.Stop()
		if got, want := b.Deadline(), start.Add(70*time.Second); !got.Equal(want) {
			t.Errorf("Deadline = %v, want %v (70 s left of 100)", got, want)
		}
		if got := b.Remaining(); got != 70*time.Second {
			t.Errorf("Remaining = %v, want 70s", got)
		}
		time.Sleep(49 * time.Second)
		synctest.Wait()
		if closed(b.WrapUp()) {
			t.Fatal("wrap-up at 79 s of the run, want it at 80 s")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if !closed(b.WrapUp()) || !b.TakeWrapUp() {
			t.Fatal("no wrap-up at 80 s of the run (50 s after the resume)")
		}
		<-b.Done()
		if got := time.Since(start); got != 70*time.Second {
			t.Errorf("Done %v after the resume, want 70s", got)
		}
	})
	b := ResumeBudget(time.Second, time.Hour, nil) // more than all spent: clamped, spent at once
	defer b.Stop()
	<-b.Done()
	if !b.TakeWrapUp() || b.Remaining() != 0 {
		t.Error("a budget resumed with more than its total spent is not spent")
	}
}

// TestBudgetAtDeadline: a function given to AtDeadline runs once the
// deadline has come, after Done is closed, and not before; one cancelled
// never runs; one given after the deadline runs at once.
func TestBudgetAtDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBudget(10*time.Second, nil)
		defer b.Stop()
		ran := make(chan bool, 3)
		b.AtDeadline(func() {
			select {
			case <-b.Done():
				ran <- true
			default:
				ran <- false
			}
		})
		cancel := b.AtDeadline(func() { ran <- false })
		time.Sleep(9 * time.Second)
		synctest.Wait()
		if len(ran) != 0 {
			t.Fatal("ran before the deadline")
		}
		if !cancel() {
			t.Error("cancel before the deadline reported the function already run")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if len(ran) != 1 || !<-ran {
			t.Fatal("at the deadline: want exactly the one function not cancelled to run, after Done is closed")
		}
		b.AtDeadline(func() { ran <- true })
		synctest.Wait()
		if len(ran) != 1 {
			t.Error("a function given after the deadline did not run")
		}
	})
}
