package timeouts

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// qwq is an attempt of a fresh call (no retry, no idempotency key).
var qwq = Attempt{Provider: "llama", Model: "qwq"}

// kill runs n allowed calls that all end in a stale kill.
func kill(t *testing.T, b *Breaker, n int) {
	t.Helper()
	for i := range n {
		if err := b.Allow(Attempt{Provider: "llama", Model: "qwq"}); err != nil {
			t.Fatalf("call %d: Allow = %v, want nil", i+1, err)
		}
		b.Record(qwq, StaleKill)
	}
}

func TestBreakerTrips(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBreaker(DefaultGiveUp, time.Minute, nil)
		kill(t, b, 5)
		err := b.Allow(Attempt{Provider: "llama", Model: "qwq"})
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
	if err := b.Allow(Attempt{Provider: "llama", Model: "qwq"}); err != nil {
		t.Errorf("Allow after 4 stale kills = %v, want nil", err)
	}
}

func TestBreakerDisabled(t *testing.T) {
	b := NewBreaker(0, 0, nil)
	kill(t, b, 50)
	if err := b.Allow(Attempt{Provider: "llama", Model: "qwq"}); err != nil {
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
			if err := b.Allow(Attempt{Provider: "llama", Model: "qwq"}); err != nil {
				return err
			}
			b.Record(qwq, Completed)
			return b.Allow(Attempt{Provider: "llama", Model: "qwq"})
		}},
		{"model change", func(b *Breaker) error { return b.Allow(Attempt{Provider: "llama", Model: "qwen3-32b"}) }},
		{"provider change", func(b *Breaker) error { return b.Allow(Attempt{Provider: "other", Model: "qwq"}) }},
		{"explicit model change", func(b *Breaker) error {
			b.Reset(ResetModelChange)
			return b.Allow(Attempt{Provider: "llama", Model: "qwq"})
		}},
		{"fallback", func(b *Breaker) error {
			b.Reset(ResetFallback)
			return b.Allow(Attempt{Provider: "llama", Model: "qwq"})
		}},
		{"new turn", func(b *Breaker) error {
			b.Reset(ResetNewTurn)
			return b.Allow(Attempt{Provider: "llama", Model: "qwq"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := NewBreaker(3, time.Minute, nil)
				kill(t, b, 3)
				if err := b.Allow(Attempt{Provider: "llama", Model: "qwq"}); !errors.Is(err, ErrGaveUp) {
					t.Fatalf("tripped breaker: Allow = %v, want ErrGaveUp", err)
				}
				if err := tt.reset(b); err != nil {
					t.Fatalf("after %s: Allow = %v, want nil", tt.name, err)
				}
				if got := b.State().Streak; got != 0 {
					t.Errorf("after %s: streak %d, want 0", tt.name, got)
				}
				// Closed again: it takes a full streak to trip.
				kill(t, b, 2)
				if err := b.Allow(Attempt{Provider: "llama", Model: "qwq"}); err != nil {
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
		if err := b.Allow(Attempt{Provider: "llama", Model: "qwq"}); !errors.Is(err, ErrGaveUp) {
			t.Fatalf("before the interval: Allow = %v, want ErrGaveUp", err)
		}
		time.Sleep(time.Second)
		if err := b.Allow(Attempt{Provider: "llama", Model: "qwq"}); err != nil {
			t.Fatalf("probe after 30s: Allow = %v, want nil", err)
		}
		if err := b.Allow(Attempt{Provider: "llama", Model: "qwq"}); !errors.Is(err, ErrGaveUp) {
			t.Fatalf("second call in the same interval: Allow = %v, want ErrGaveUp", err)
		}

		// The probe goes stale after 10 s: the next one is 30 s after that.
		time.Sleep(10 * time.Second)
		b.Record(qwq, StaleKill)
		var gu *GiveUpError
		if err := b.Allow(Attempt{Provider: "llama", Model: "qwq"}); !errors.As(err, &gu) || gu.Streak != 3 || gu.ProbeIn != 30*time.Second {
			t.Fatalf("after a failed probe: Allow = %v, want streak 3 and a probe in 30s", err)
		}
		time.Sleep(30 * time.Second)
		if err := b.Allow(Attempt{Provider: "llama", Model: "qwq"}); err != nil {
			t.Fatalf("second probe: Allow = %v, want nil", err)
		}
		b.Record(qwq, Completed)
		for i := range 3 {
			if err := b.Allow(Attempt{Provider: "llama", Model: "qwq"}); err != nil {
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
		if err := b.Allow(Attempt{Provider: "llama", Model: "qwq"}); err != nil {
			t.Fatalf("Allow = %v, want nil", err)
		}
		b.Record(qwq, Failed)
	}
	if got := b.State().Streak; got != 1 {
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

// TestBreakerOneStrikePerCall: the attempts of one user call (an SDK's
// retries, marked by its retry count or sharing an idempotency key) are
// one strike, whichever of them go stale.
func TestBreakerOneStrikePerCall(t *testing.T) {
	at := func(call string, retry bool) Attempt {
		return Attempt{Provider: "llama", Model: "qwq", Call: call, Retry: retry}
	}
	type step struct {
		a Attempt
		o Outcome
	}
	tests := []struct {
		name  string
		steps []step
		want  int
	}{
		{"SDK retries (retry count)", []step{{at("", false), StaleKill}, {at("", true), StaleKill}, {at("", true), StaleKill}}, 1},
		{"same idempotency key", []step{{at("k1", false), StaleKill}, {at("k1", false), StaleKill}, {at("k1", true), StaleKill}}, 1},
		{"three calls", []step{{at("", false), StaleKill}, {at("", false), StaleKill}, {at("", false), StaleKill}}, 3},
		{"three keys", []step{{at("k1", false), StaleKill}, {at("k2", true), StaleKill}, {at("k3", false), StaleKill}}, 3},
		{"a retry after another failure of the call", []step{{at("", false), StaleKill}, {at("", true), Failed}, {at("", true), StaleKill}}, 1},
		{"a fresh call's failure ends the last call", []step{{at("", false), StaleKill}, {at("", false), Failed}, {at("", true), StaleKill}}, 2},
		{"retries of two calls", []step{{at("", false), StaleKill}, {at("", true), StaleKill}, {at("", false), StaleKill}, {at("", true), StaleKill}}, 2},
		{"a retry on another model is another call", []step{{at("", false), StaleKill}, {Attempt{Provider: "llama", Model: "qwen3", Retry: true}, StaleKill}}, 2},
		{"a completed retry resets", []step{{at("", false), StaleKill}, {at("", true), Completed}, {at("", true), StaleKill}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBreaker(DefaultGiveUp, time.Minute, nil)
			for i, s := range tt.steps {
				if err := b.Allow(s.a); err != nil {
					t.Fatalf("attempt %d: Allow = %v", i+1, err)
				}
				b.Record(s.a, s.o)
			}
			if got := b.State().ProviderStreak; got != tt.want {
				t.Errorf("got %d strikes, want %d", got, tt.want)
			}
		})
	}
}

// TestBreakerProviderStreak: a model change resets the model streak, as
// the seed says, but not the provider streak: kills spanning models trip
// it, so an agent alternating between dead models is stopped.
func TestBreakerProviderStreak(t *testing.T) {
	a := Attempt{Provider: "llama", Model: "a"}
	bm := Attempt{Provider: "llama", Model: "b"}
	c := Attempt{Provider: "llama", Model: "c"}
	strike := func(t *testing.T, br *Breaker, at Attempt) {
		t.Helper()
		if err := br.Allow(at); err != nil {
			t.Fatalf("Allow(%s) = %v, want nil", at.Model, err)
		}
		br.Record(at, StaleKill)
	}
	t.Run("alternating dead models trip it", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			br := NewBreaker(5, time.Minute, nil)
			for i := range 5 {
				strike(t, br, []Attempt{a, bm}[i%2])
			}
			st := br.State()
			if st.Streak != 1 || st.ProviderStreak != 5 || st.Open != ScopeProvider {
				t.Fatalf("state %+v, want model streak 1, provider streak 5, open by provider", st)
			}
			err := br.Allow(c) // a third model does not help
			var gu *GiveUpError
			if !errors.As(err, &gu) || gu.Scope != ScopeProvider || gu.Streak != 5 {
				t.Fatalf("Allow(c) = %v, want a provider give-up with streak 5", err)
			}
			for _, s := range []string{"provider llama: 5 consecutive stale kills across models a, b", "(model c)", "switching model does not help", EnvGiveUp + "=5"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			time.Sleep(time.Minute) // the probe goes through, and completes
			if err := br.Allow(c); err != nil {
				t.Fatalf("probe: Allow = %v", err)
			}
			br.Record(c, Completed)
			if st := br.State(); st.Streak != 0 || st.ProviderStreak != 0 || st.Open != ScopeNone {
				t.Errorf("after a completed probe: %+v, want all clear", st)
			}
		})
	})
	t.Run("switching model after a model trip gets its chance", func(t *testing.T) {
		br := NewBreaker(5, time.Minute, nil)
		for range 5 {
			strike(t, br, a)
		}
		if err := br.Allow(a); !errors.Is(err, ErrGaveUp) {
			t.Fatalf("Allow(a) = %v, want the model give-up", err)
		}
		strike(t, br, bm) // the seed's advice
		var gu *GiveUpError
		if err := br.Allow(bm); !errors.As(err, &gu) || gu.Scope != ScopeProvider || gu.Streak != 6 {
			t.Fatalf("after b went silent too: Allow = %v, want a provider give-up with streak 6", err)
		}
		br.Reset(ResetNewTurn)
		if err := br.Allow(c); err != nil {
			t.Errorf("new turn: Allow = %v, want nil", err)
		}
	})
	t.Run("model change resets only the model streak", func(t *testing.T) {
		br := NewBreaker(5, time.Minute, nil)
		for _, at := range []Attempt{a, a, a, bm} {
			strike(t, br, at)
		}
		br.Reset(ResetModelChange)
		if st := br.State(); st.Streak != 0 || st.ProviderStreak != 4 || st.Open != ScopeNone {
			t.Errorf("state %+v, want model streak 0, provider streak 4, closed", st)
		}
		strike(t, br, a)
		if st := br.State(); st.Open != ScopeProvider {
			t.Errorf("state %+v, want open by provider", st)
		}
	})
	t.Run("0 disables both", func(t *testing.T) {
		br := NewBreaker(0, time.Minute, nil)
		for i := range 20 {
			strike(t, br, []Attempt{a, bm}[i%2])
		}
	})
	t.Run("a provider change starts over", func(t *testing.T) {
		br := NewBreaker(2, time.Minute, nil)
		strike(t, br, a)
		strike(t, br, bm)
		if err := br.Allow(Attempt{Provider: "other", Model: "a"}); err != nil {
			t.Errorf("other provider: Allow = %v, want nil", err)
		}
	})
}
