package timeouts

import (
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
