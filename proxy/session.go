package proxy

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/hermes-units/hermes/timeouts"
)

// Request headers a client may send.
const (
	// HeaderSession names the conversation the give-up breaker follows.
	// Without it, the breaker follows the client address and provider (a
	// run's calls: the run and provider).
	HeaderSession = "X-Hermes-Session"
	// HeaderTurn changes on each user turn; a change resets the breaker.
	HeaderTurn = "X-Hermes-Turn"
	// HeaderRunID names a registered run, as the /run/<id>/v1 prefix does.
	HeaderRunID = "X-Hermes-Run-Id"

	// HeaderRetryCount is an OpenAI SDK's attempt number of a call (0 for
	// the first): above 0, the attempt retries the client's previous call.
	HeaderRetryCount = "X-Stainless-Retry-Count"
	// HeaderIdempotencyKey is the same on every attempt of one call, when
	// the client sends it.
	HeaderIdempotencyKey = "Idempotency-Key"
)

// maxSessions bounds the breakers kept: past it, the session seen least
// recently is dropped, so a client inventing session names cannot grow
// the proxy without bound.
const maxSessions = 4096

// maxKeyLen bounds a client-chosen session name or idempotency key kept
// as is; a longer one is kept as its hash.
const maxKeyLen = 128

// sessionIdle is how long a session's breaker is kept without calls.
const sessionIdle = time.Hour

// BreakerStatus is one session's give-up breaker, for `hermesctl status`.
type BreakerStatus struct {
	Session  string `json:"session"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Streak is the model streak: consecutive stale kills of Model, reset
	// by a model change. ProviderStreak counts them across models.
	Streak         int `json:"streak"`
	ProviderStreak int `json:"provider_streak"`
	// Threshold is the HERMES_STREAM_STALE_GIVEUP in force, 0 disabled.
	Threshold int  `json:"threshold"`
	Tripped   bool `json:"tripped"`
	// TrippedBy is the streak that tripped (model or provider) while
	// tripped, ScopeNone (absent) while closed.
	TrippedBy timeouts.Scope `json:"tripped_by,omitempty"`
}

// session is the breaker state of one conversation.
type session struct {
	key       string
	breaker   *timeouts.Breaker
	threshold int
	mu        sync.Mutex
	tripped   bool      // guarded by mu: open, as last reported (report.go)
	provider  string    // guarded by mu: of the last call
	model     string    // guarded by mu
	turn      string    // guarded by mu: the last X-Hermes-Turn seen
	seen      time.Time // guarded by mu
}

// sessions is the set of breakers, keyed by session key.
type sessions struct {
	now      func() time.Time
	interval time.Duration

	mu sync.Mutex
	m  map[string]*session // guarded by mu
}

// get returns the session for key, creating it with the plan's threshold;
// idle sessions are dropped on the way.
func (s *sessions) get(key string, threshold int) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss, ok := s.m[key]; ok {
		return ss
	}
	now := s.now()
	oldest, oldestSeen := "", now
	for k, ss := range s.m {
		ss.mu.Lock()
		seen := ss.seen
		ss.mu.Unlock()
		if now.Sub(seen) > sessionIdle {
			delete(s.m, k)
		} else if !seen.After(oldestSeen) {
			oldest, oldestSeen = k, seen
		}
	}
	if len(s.m) >= maxSessions {
		delete(s.m, oldest)
	}
	ss := &session{key: key, breaker: timeouts.NewBreaker(threshold, s.interval, s.now), threshold: threshold, seen: now}
	s.m[key] = ss
	return ss
}

// allow applies the resets a request implies (a new turn; a model change
// is the breaker's own) and asks the breaker about attempt a.
func (ss *session) allow(a timeouts.Attempt, turn string, now time.Time) error {
	ss.mu.Lock()
	ss.provider, ss.model, ss.seen = a.Provider, a.Model, now
	newTurn := turn != "" && turn != ss.turn
	if turn != "" {
		ss.turn = turn
	}
	ss.mu.Unlock()
	if newTurn {
		ss.breaker.Reset(timeouts.ResetNewTurn)
	}
	return ss.breaker.Allow(a)
}

// attempt is the breaker's view of a request: the call it belongs to, by
// the client's Idempotency-Key (hashed when long), and whether an OpenAI
// SDK marks it as a retry (X-Stainless-Retry-Count above 0).
func attempt(r *http.Request, provider, model string) timeouts.Attempt {
	a := timeouts.Attempt{Provider: provider, Model: model, Call: bounded(r.Header.Get(HeaderIdempotencyKey))}
	if n, err := strconv.Atoi(strings.TrimSpace(r.Header.Get(HeaderRetryCount))); err == nil && n > 0 {
		a.Retry = true
	}
	return a
}

// sessionKey is the give-up breaker's key, so that each client has its own
// streaks: the client's X-Hermes-Session as it names it (one breaker,
// which a change of provider starts over), else its run (the /run/<id>/v1
// prefix or X-Hermes-Run-Id a job sends), else a hash of the bearer token
// it presents (never the token itself: status shows keys), these two with
// the provider. Not the client's address: every local client has the
// same. A client with none of these shares the "anonymous" session.
func sessionKey(r *http.Request, runID, provider string) string {
	if s := r.Header.Get(HeaderSession); s != "" {
		return bounded(s)
	}
	if runID != "" {
		return "run " + bounded(runID) + " → " + provider
	}
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && strings.TrimSpace(tok) != "" {
		sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
		return "token sha256:" + hex.EncodeToString(sum[:6]) + " → " + provider
	}
	return "anonymous → " + provider
}

// bounded returns s, or "sha256:" and its hash when s is over maxKeyLen
// bytes or holds control characters.
func bounded(s string) string {
	if len(s) <= maxKeyLen && !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:8])
}

func (s *sessions) status() []BreakerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]BreakerStatus, 0, len(s.m))
	for k, ss := range s.m {
		ss.mu.Lock()
		st := BreakerStatus{Session: k, Provider: ss.provider, Model: ss.model, Threshold: ss.threshold}
		ss.mu.Unlock()
		bs := ss.breaker.State()
		st.Streak, st.ProviderStreak = bs.Streak, bs.ProviderStreak
		st.Tripped, st.TrippedBy = bs.Open != timeouts.ScopeNone, bs.Open
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b BreakerStatus) int { return strings.Compare(a.Session, b.Session) })
	return out
}
