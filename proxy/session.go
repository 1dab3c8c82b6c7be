package proxy

import (
	"slices"
	"strings"
	"sync"
	"time"

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
)

// sessionIdle is how long a session's breaker is kept without calls.
const sessionIdle = time.Hour

// BreakerStatus is one session's give-up breaker, for `hermesctl status`.
type BreakerStatus struct {
	Session  string `json:"session"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Streak   int    `json:"streak"`
	// Threshold is the HERMES_STREAM_STALE_GIVEUP in force, 0 disabled.
	Threshold int  `json:"threshold"`
	Tripped   bool `json:"tripped"`
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
	for k, ss := range s.m {
		ss.mu.Lock()
		idle := now.Sub(ss.seen) > sessionIdle
		ss.mu.Unlock()
		if idle {
			delete(s.m, k)
		}
	}
	ss := &session{key: key, breaker: timeouts.NewBreaker(threshold, s.interval, s.now), threshold: threshold, seen: now}
	s.m[key] = ss
	return ss
}

// allow applies the resets a request implies (a new turn; a model change
// is the breaker's own) and asks the breaker.
func (ss *session) allow(provider, model, turn string, now time.Time) error {
	ss.mu.Lock()
	ss.provider, ss.model, ss.seen = provider, model, now
	newTurn := turn != "" && turn != ss.turn
	if turn != "" {
		ss.turn = turn
	}
	ss.mu.Unlock()
	if newTurn {
		ss.breaker.Reset(timeouts.ResetNewTurn)
	}
	return ss.breaker.Allow(provider, model)
}

func (s *sessions) status() []BreakerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]BreakerStatus, 0, len(s.m))
	for k, ss := range s.m {
		ss.mu.Lock()
		st := BreakerStatus{Session: k, Provider: ss.provider, Model: ss.model, Threshold: ss.threshold}
		ss.mu.Unlock()
		st.Streak = ss.breaker.Streak()
		st.Tripped = ss.threshold > 0 && st.Streak >= ss.threshold
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b BreakerStatus) int { return strings.Compare(a.Session, b.Session) })
	return out
}
