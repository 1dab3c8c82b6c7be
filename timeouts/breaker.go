package timeouts

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hermes-units/hermes/internal/word"
)

// ErrGaveUp is wrapped by every *GiveUpError.
var ErrGaveUp = errors.New("gave up on a provider that keeps going silent")

// DefaultProbeInterval is how often a tripped breaker lets one real attempt
// through to see whether the provider is back.
const DefaultProbeInterval = 60 * time.Second

// maxStreakModels bounds the model names a provider streak remembers (for
// its error text): a client may send any name.
const maxStreakModels = 8

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

var resetWords = word.Ints[ResetReason]("ResetReason", "reset reason", "model change", "fallback activation", "new turn").Wrap(ErrInvalid)

func (r ResetReason) String() string { return resetWords.Name(r) }

// Scope is which streak tripped a breaker.
type Scope int

const (
	// ScopeNone: the breaker is closed.
	ScopeNone Scope = iota
	// ScopeModel: consecutive stale kills of the current model. A model
	// change resets it (the seed's advice: switch model).
	ScopeModel
	// ScopeProvider: consecutive stale kills of the provider across
	// several models. A model change does not reset it, so an agent that
	// hops between models that all go silent is stopped too.
	ScopeProvider
)

// String returns "", "model" or "provider".
func (s Scope) String() string { return scopeWords.Name(s) }

// MarshalText is s's word; ScopeNone has none.
func (s Scope) MarshalText() ([]byte, error) { return scopeWords.Marshal(s) }

// UnmarshalText refuses a word that names no scope.
func (s *Scope) UnmarshalText(b []byte) error { return scopeWords.Unmarshal(s, b) }

var scopeWords = word.Ints[Scope]("Scope", "scope", "", "model", "provider").Wrap(ErrInvalid)

// Attempt is one try of a user's call, as the breaker sees it. An SDK
// retries a call that failed (OpenAI's retry twice by default): the
// retries are attempts of the same call, and the call is one strike
// however many of its attempts go stale.
type Attempt struct {
	Provider, Model string
	// Call identifies the user's call across its retries (the client's
	// Idempotency-Key); "" when the client sends none.
	Call string
	// Retry: the client marks this attempt as a retry of its previous
	// call (an OpenAI SDK's x-stainless-retry-count above 0).
	Retry bool
}

// GiveUpError is returned by Breaker.Allow while the breaker is open. It
// names the streak and what to do; match it with errors.As, or ErrGaveUp
// with errors.Is.
type GiveUpError struct {
	Provider string
	Model    string
	// Scope is the streak that tripped: ScopeModel (Streak stale kills of
	// Model) or ScopeProvider (Streak stale kills across Models).
	Scope     Scope
	Streak    int      // consecutive stale kills with no completed response
	Models    []string // ScopeProvider: the models of the streak (at most 8)
	Threshold int      // the HERMES_STREAM_STALE_GIVEUP in force
	ProbeIn   time.Duration
}

func (e *GiveUpError) Error() string {
	summary, detail := e.Parts()
	return summary + "; " + detail
}

// Parts is e's text as what happened (the streak, and that this call fails
// at once) and what to do about it.
func (e *GiveUpError) Parts() (summary, detail string) {
	explain := fmt.Sprintf("see `hermesctl timeouts explain --provider %s --model %s`", cmp.Or(e.Provider, "-"), cmp.Or(e.Model, "-"))
	probe := e.ProbeIn.Round(time.Second)
	if e.Scope == ScopeProvider {
		return fmt.Sprintf("provider %s: %d consecutive stale kills across models %s with no completed response (%s=%d), so this call (model %s) fails at once instead of waiting out the stale timeout again",
				cmp.Or(e.Provider, "-"), e.Streak, strings.Join(e.Models, ", "), EnvGiveUp, e.Threshold, cmp.Or(e.Model, "-")),
			fmt.Sprintf("switching model does not help while every model of the provider goes silent: check the provider, start a new turn, or raise its stale_timeout_seconds (%s); one probe call is let through in %s", explain, probe)
	}
	return fmt.Sprintf("provider %s, model %s: %d consecutive stale kills with no completed response (%s=%d), so this call fails at once instead of waiting out the stale timeout again",
			cmp.Or(e.Provider, "-"), cmp.Or(e.Model, "-"), e.Streak, EnvGiveUp, e.Threshold),
		fmt.Sprintf("switch model or start a new turn, check the provider, or raise its stale_timeout_seconds (%s); one probe call is let through in %s", explain, probe)
}

// Unwrap returns ErrGaveUp.
func (e *GiveUpError) Unwrap() error { return ErrGaveUp }

// State is a breaker's streaks, for status.
type State struct {
	Provider, Model string // of the last Allow
	// Streak counts the consecutive stale kills of Model; ProviderStreak
	// those of Provider across Models.
	Streak, ProviderStreak int
	Models                 []string
	Threshold              int
	// Open is the scope that tripped, ScopeNone while closed.
	Open Scope
}

// Breaker is the give-up breaker of one conversation with one provider
// (SPEC §10). It keeps two streaks of stale kills with no completed
// response in between, each counting a user call once however many of its
// attempts (an SDK's retries) went stale:
//
//   - the model streak, which a model change resets, as the seed says:
//     after Threshold kills of one model, switching model is the advice;
//   - the provider streak, which a model change does not reset: it trips
//     after Threshold kills that span more than one model, so an agent
//     alternating between models that all go silent is stopped too. A
//     streak of one model only never trips it: the first call after a
//     model change is the seed's advice being followed, and gets its
//     chance.
//
// While open, Allow fails at once with a *GiveUpError instead of letting
// another call wait out the stale timeout, and lets one call per probe
// interval through (half-open), so a provider that recovers is used again
// without the user switching models.
//
// Callers: Allow before each attempt, Record once with its outcome, Reset
// on a model change, a fallback activation or a new turn. A change of model
// passed to Allow resets the model streak, a change of provider both.
// Threshold 0 disables both streaks. Safe for concurrent use.
type Breaker struct {
	threshold int
	interval  time.Duration
	now       func() time.Time

	mu        sync.Mutex
	provider  string    // guarded by mu: of the last Allow
	model     string    // guarded by mu
	streak    int       // guarded by mu: the model streak
	pstreak   int       // guarded by mu: the provider streak
	pmodels   []string  // guarded by mu: distinct models of the provider streak, at most maxStreakModels
	mixed     bool      // guarded by mu: the provider streak spans more than one model
	nextProbe time.Time // guarded by mu; meaningful while open
	// The last strike, to know a retry of its call: set by a stale kill,
	// cleared by a completed response or another call's outcome.
	struck     bool   // guarded by mu
	struckCall string // guarded by mu
	struckAt   string // guarded by mu: provider + "\x00" + model of the strike
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

// Allow asks whether attempt a may go ahead. It returns nil when the
// breaker is closed, or open with a probe due (that probe is then the one
// attempt of this interval); otherwise a *GiveUpError.
func (b *Breaker) Allow(a Attempt) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case a.Provider != b.provider:
		b.provider, b.model = a.Provider, a.Model
		b.streak, b.pstreak, b.pmodels, b.mixed = 0, 0, nil, false
	case a.Model != b.model:
		b.model, b.streak = a.Model, 0
	}
	scope := b.openLocked()
	if scope == ScopeNone {
		return nil
	}
	now := b.now()
	if !now.Before(b.nextProbe) {
		b.nextProbe = now.Add(b.interval)
		return nil
	}
	e := &GiveUpError{Provider: b.provider, Model: b.model, Scope: scope, Streak: b.streak, Threshold: b.threshold, ProbeIn: b.nextProbe.Sub(now)}
	if scope == ScopeProvider {
		e.Streak, e.Models = b.pstreak, slices.Clone(b.pmodels)
	}
	return e
}

// Record reports the outcome of an allowed attempt.
func (b *Breaker) Record(a Attempt, o Outcome) {
	b.mu.Lock()
	defer b.mu.Unlock()
	at := a.Provider + "\x00" + a.Model
	// A retry of the call whose kill was the last strike: same provider
	// and model, and the same idempotency key, or (without one) the
	// client's retry mark.
	sameCall := b.struck && at == b.struckAt && ((a.Call != "" && a.Call == b.struckCall) || (a.Call == "" && b.struckCall == "" && a.Retry))
	switch o {
	case Completed:
		b.streak, b.pstreak, b.pmodels, b.mixed, b.struck = 0, 0, nil, false, false
	case StaleKill:
		if !sameCall {
			b.strikeLocked(a.Model)
		}
		b.struck, b.struckCall, b.struckAt = true, a.Call, at
		if b.openLocked() != ScopeNone {
			// Trip, or a failed probe: the next probe is a full interval
			// after this kill.
			b.nextProbe = b.now().Add(b.interval)
		}
	case Failed:
		if !sameCall {
			b.struck = false
		}
	}
}

func (b *Breaker) strikeLocked(model string) {
	b.streak++
	if b.pstreak > 0 && !slices.Contains(b.pmodels, model) {
		b.mixed = true
	}
	b.pstreak++
	if !slices.Contains(b.pmodels, model) && len(b.pmodels) < maxStreakModels {
		b.pmodels = append(b.pmodels, model)
	}
}

// Reset clears the model streak; a new turn clears the provider streak
// too (a fallback or a model change is what the provider streak watches).
func (b *Breaker) Reset(r ResetReason) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.streak, b.struck = 0, false
	if r == ResetNewTurn {
		b.pstreak, b.pmodels, b.mixed = 0, nil, false
	}
}

// State returns both streaks and whether the breaker is open.
func (b *Breaker) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	return State{Provider: b.provider, Model: b.model, Streak: b.streak, ProviderStreak: b.pstreak,
		Models: slices.Clone(b.pmodels), Threshold: b.threshold, Open: b.openLocked()}
}

func (b *Breaker) openLocked() Scope {
	switch {
	case b.threshold == 0:
		return ScopeNone
	case b.streak >= b.threshold:
		return ScopeModel
	case b.pstreak >= b.threshold && b.mixed:
		return ScopeProvider
	}
	return ScopeNone
}
