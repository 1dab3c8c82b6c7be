package timeouts

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// kill runs n allowed calls that all end in a stale kill.
func kill(t *testing.T, b *Breaker, n int) {
	t.Helper()
	for i := range n {
		if err := b.Allow("llama", "qwq"); err != nil {
			t.Fatalf("call %d: Allow = %v, want nil", i+1, err)
		}
		b.Record(StaleKill)
	}
}

func TestBreakerTrips(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBreaker(DefaultGiveUp, time.Minute, nil)
		kill(t, b, 5)
		err := b.Allow("llama", "qwq")
		var gu *GiveUpError
		if !errors.As(err, &gu) {
			t.Fatalf("Allow after 5 stale kills = %v, want a *GiveUpError", err)
		}
		if !errors.Is(err, ErrGaveUp) {
			t.Errorf("errors.Is(%v, ErrGaveUp) = false", err)
		}
		if gu.Streak != 5 || gu.Threshold != 5 || gu.Provider != "llama" || gu.Model != "qwq" {
			t.Errorf("GiveUpError = %+v, want streak 5 of 5 for llama/qwq", gu)
		}
		if gu.ProbeIn != time.Minute {
			t.Errorf("ProbeIn = %v, want 1m0s", gu.ProbeIn)
		}
	})
}

func TestBreakerBelowThreshold(t *testing.T) {
	b := NewBreaker(5, 0, nil)
	kill(t, b, 4)
	if err := b.Allow("llama", "qwq"); err != nil {
		t.Errorf("Allow after 4 stale kills = %v, want nil", err)
	}
}

func TestBreakerDisabled(t *testing.T) {
	b := NewBreaker(0, 0, nil)
	kill(t, b, 50)
	if err := b.Allow("llama", "qwq"); err != nil {
		t.Errorf("disabled breaker: Allow = %v, want nil", err)
	}
}

func TestBreakerResets(t *testing.T) {
	tests := []struct {
		name  string
		reset func(b *Breaker) error // returns the Allow that follows the reset
	}{
		{"completed response", func(b *Breaker) error {
			// A completed response needs an allowed call: the probe.
			time.Sleep(time.Minute)
			if err := b.Allow("llama", "qwq"); err != nil {
				return err
			}
			b.Record(Completed)
			return b.Allow("llama", "qwq")
		}},
		{"model change", func(b *Breaker) error { return b.Allow("llama", "qwen3-32b") }},
		{"provider change", func(b *Breaker) error { return b.Allow("other", "qwq") }},
		{"explicit model change", func(b *Breaker) error { b.Reset(ResetModelChange); return b.Allow("llama", "qwq") }},
		{"fallback", func(b *Breaker) error { b.Reset(ResetFallback); return b.Allow("llama", "qwq") }},
		{"new turn", func(b *Breaker) error { b.Reset(ResetNewTurn); return b.Allow("llama", "qwq") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := NewBreaker(3, time.Minute, nil)
				kill(t, b, 3)
				if err := b.Allow("llama", "qwq"); !errors.Is(err, ErrGaveUp) {
					t.Fatalf("tripped breaker: Allow = %v, want ErrGaveUp", err)
				}
				if err := tt.reset(b); err != nil {
					t.Fatalf("after %s: Allow = %v, want nil", tt.name, err)
				}
				if got := b.Streak(); got != 0 {
					t.Errorf("after %s: streak %d, want 0", tt.name, got)
				}
				// Closed again: it takes a full streak to trip.
				kill(t, b, 2)
				if err := b.Allow("llama", "qwq"); err != nil {
					t.Errorf("2 kills after %s: Allow = %v, want nil", tt.name, err)
				}
			})
		})
	}
}

// TestBreakerProbe: while open, one call per interval goes through; a
// failed probe waits a full interval again, a successful one closes the
// breaker (a recovered local model is not stuck until a model change).
func TestBreakerProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBreaker(2, 30*time.Second, nil)
		kill(t, b, 2)

		time.Sleep(29 * time.Second)
		if err := b.Allow("llama", "qwq"); !errors.Is(err, ErrGaveUp) {
			t.Fatalf("before the interval: Allow = %v, want ErrGaveUp", err)
		}
		time.Sleep(time.Second)
		if err := b.Allow("llama", "qwq"); err != nil {
			t.Fatalf("probe after 30s: Allow = %v, want nil", err)
		}
		if err := b.Allow("llama", "qwq"); !errors.Is(err, ErrGaveUp) {
			t.Fatalf("second call in the same interval: Allow = %v, want ErrGaveUp", err)
		}

		// The probe goes stale after 10 s: the next one is 30 s after that.
		time.Sleep(10 * time.Second)
		b.Record(StaleKill)
		var gu *GiveUpError
		if err := b.Allow("llama", "qwq"); !errors.As(err, &gu) || gu.Streak != 3 || gu.ProbeIn != 30*time.Second {
			t.Fatalf("after a failed probe: Allow = %v, want streak 3 and a probe in 30s", err)
		}
		time.Sleep(30 * time.Second)
		if err := b.Allow("llama", "qwq"); err != nil {
			t.Fatalf("second probe: Allow = %v, want nil", err)
		}
		b.Record(Completed)
		for i := range 3 {
			if err := b.Allow("llama", "qwq"); err != nil {
				t.Fatalf("after a completed probe, call %d: Allow = %v, want nil", i, err)
			}
		}
	})
}

// TestBreakerOtherFailures: a non-stale failure neither trips nor resets.
func TestBreakerOtherFailures(t *testing.T) {
	b := NewBreaker(2, time.Minute, nil)
	kill(t, b, 1)
	for range 5 {
		if err := b.Allow("llama", "qwq"); err != nil {
			t.Fatalf("Allow = %v, want nil", err)
		}
		b.Record(Failed)
	}
	if got := b.Streak(); got != 1 {
		t.Errorf("streak after failures = %d, want 1", got)
	}
}

func TestGiveUpErrorIsActionable(t *testing.T) {
	err := &GiveUpError{Provider: "llama", Model: "qwq", Streak: 5, Threshold: 5, ProbeIn: 42 * time.Second}
	msg := err.Error()
	for _, want := range []string{"llama", "qwq", "5 consecutive stale kills", EnvGiveUp, "switch model", "timeouts explain", "42s"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
}
