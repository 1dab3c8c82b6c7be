package timeouts

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrGaveUp is wrapped by every *GiveUpError.
var ErrGaveUp = errors.New("gave up on a provider that keeps going silent")

// DefaultProbeInterval is how often a tripped breaker lets one real attempt
// through to see whether the provider is back.
const DefaultProbeInterval = 60 * time.Second

// Outcome is what became of a call the breaker allowed.
type Outcome int

const (
	// Completed: a response arrived in full. Resets the streak.
	Completed Outcome = iota
	// StaleKill: a stale detector (stream, non-stream or first event) cut
	// the call. Extends the streak.
	StaleKill
	// Failed: any other error (refused connection, HTTP 5xx, cancelled by
	// the client). Leaves the streak as it is: it neither proves the
	// provider answers nor that it goes silent.
	Failed
)

// ResetReason says why a caller reset the breaker.
type ResetReason int

const (
	ResetModelChange ResetReason = iota // the user switched model
	ResetFallback                       // a fallback provider or model took over
	ResetNewTurn                        // a new user turn started
)

func (r ResetReason) String() string {
	switch r {
	case ResetModelChange:
		return "model change"
	case ResetFallback:
		return "fallback activation"
	case ResetNewTurn:
		return "new turn"
	}
	return fmt.Sprintf("ResetReason(%d)", int(r))
}

// GiveUpError is returned by Breaker.Allow while the breaker is open. It
// names the streak and what to do; match it with errors.As, or ErrGaveUp
// with errors.Is.
type GiveUpError struct {
	Provider  string
	Model     string
	Streak    int           // consecutive stale kills with no completed response
	Threshold int           // the HERMES_STREAM_STALE_GIVEUP in force
	ProbeIn   time.Duration // until the next probe attempt is let through
}

func (e *GiveUpError) Error() string {
	return fmt.Sprintf("provider %s, model %s: %d consecutive stale kills with no completed response (%s=%d), so this call fails at once instead of waiting out the stale timeout again; "+
		"switch model or start a new turn, check the provider, or raise its stale_timeout_seconds (see `hermesctl timeouts explain --provider %s --model %s`); one probe call is let through in %s",
		orDash(e.Provider), orDash(e.Model), e.Streak, EnvGiveUp, e.Threshold, orDash(e.Provider), orDash(e.Model), e.ProbeIn.Round(time.Second))
}

// Unwrap returns ErrGaveUp.
func (e *GiveUpError) Unwrap() error { return ErrGaveUp }

// Breaker is the give-up breaker of one conversation (SPEC §10): after
// Threshold consecutive stale kills with no completed response, Allow fails
// at once with a *GiveUpError instead of letting another call wait out the
// stale timeout. While open, one call per probe interval is let through
// (half-open), so a local model that recovers is used again without the
// user switching models.
//
// Callers: Allow before each provider call, Record once with its outcome,
// Reset on a model change, a fallback activation or a new turn. A change of
// provider or model passed to Allow resets the breaker as well. Safe for
// concurrent use.
type Breaker struct {
	threshold int
	interval  time.Duration
	now       func() time.Time

	mu        sync.Mutex
	key       string    // guarded by mu: provider + "\x00" + model of the last Allow
	provider  string    // guarded by mu
	model     string    // guarded by mu
	streak    int       // guarded by mu
	nextProbe time.Time // guarded by mu; meaningful while open
}

// NewBreaker returns a closed breaker. threshold 0 disables it (Allow always
// succeeds); probeInterval ≤ 0 takes DefaultProbeInterval; a nil now takes
// time.Now.
func NewBreaker(threshold int, probeInterval time.Duration, now func() time.Time) *Breaker {
	if probeInterval <= 0 {
		probeInterval = DefaultProbeInterval
	}
	if now == nil {
		now = time.Now
	}
	return &Breaker{threshold: max(threshold, 0), interval: probeInterval, now: now}
}

// Allow asks whether a call to provider/model may go ahead. It returns nil
// when the breaker is closed, or open with a probe due (that probe is then
// the one attempt of this interval); otherwise a *GiveUpError.
func (b *Breaker) Allow(provider, model string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if key := provider + "\x00" + model; key != b.key {
		b.key, b.provider, b.model, b.streak = key, provider, model, 0
	}
	if !b.openLocked() {
		return nil
	}
	now := b.now()
	if !now.Before(b.nextProbe) {
		b.nextProbe = now.Add(b.interval)
		return nil
	}
	return &GiveUpError{Provider: b.provider, Model: b.model, Streak: b.streak, Threshold: b.threshold, ProbeIn: b.nextProbe.Sub(now)}
}

// Record reports the outcome of an allowed call.
func (b *Breaker) Record(o Outcome) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch o {
	case Completed:
		b.streak = 0
	case StaleKill:
		b.streak++
		if b.openLocked() {
			// Trip, or a failed probe: the next probe is a full interval
			// after this kill.
			b.nextProbe = b.now().Add(b.interval)
		}
	}
}

// Reset closes the breaker and clears the streak.
func (b *Breaker) Reset(ResetReason) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.streak = 0
}

// Streak returns the current count of consecutive stale kills.
func (b *Breaker) Streak() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.streak
}

func (b *Breaker) openLocked() bool { return b.threshold > 0 && b.streak >= b.threshold }
