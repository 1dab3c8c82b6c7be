package proxy

import (
	"context"
	"errors"
	"time"

	"github.com/hermes-units/hermes/timeouts"
)

// Report is one model call, given to Options.Report once it has ended:
// hermesd counts it in its metrics and publishes its cut and the breaker
// trips and resets it caused as events.
type Report struct {
	Provider, Model string
	Session         string // the give-up breaker's session key
	Stream          bool
	// Outcome is what the breaker was told; GaveUp calls were refused by
	// an open breaker before anything was sent.
	Outcome timeouts.Outcome
	GaveUp  bool
	// Cut is the layer that cut the call; nil when none did.
	Cut *CutError
	// TTFT is the time from the request to the first content event of a
	// stream (0: none came); Duration is the whole call.
	TTFT, Duration time.Duration
	// The session's breaker after the call: its streak and threshold, and
	// whether it is open. Changed is set when Tripped differs from what
	// the session's previous report said (or, for its first, from closed):
	// a trip, or a reset (a completed probe, a new turn, a model change).
	Streak, Threshold int
	Tripped, Changed  bool
}

// report tells Options.Report about a call that reached the breaker
// (the handler goroutine, once the call has ended). ctx is the call's: its
// cause says whether a layer cut it.
func (p *Proxy) report(ctx context.Context, wd *watchdog, o timeouts.Outcome) {
	if p.opts.Report == nil || wd.ss == nil {
		return
	}
	r := Report{Provider: wd.template.Provider, Model: wd.template.Model, Stream: wd.plan.Stream,
		Outcome: o, Duration: time.Since(wd.began)}
	if !wd.firstContent.IsZero() {
		r.TTFT = wd.firstContent.Sub(wd.began)
	}
	if ce, ok := errors.AsType[*CutError](context.Cause(ctx)); ok {
		r.Cut = ce
	}
	p.reportSession(wd.ss, r)
}

// reportGaveUp tells Options.Report about a call an open breaker refused.
func (p *Proxy) reportGaveUp(ss *session, provider, model string, stream bool) {
	if p.opts.Report == nil {
		return
	}
	p.reportSession(ss, Report{Provider: provider, Model: model, Stream: stream, Outcome: timeouts.Failed, GaveUp: true})
}

// reportSession fills r's breaker fields from ss and sends it.
func (p *Proxy) reportSession(ss *session, r Report) {
	r.Session, r.Threshold = ss.key, ss.threshold
	st := ss.breaker.State()
	r.Streak = st.Streak
	r.Tripped = st.Open != timeouts.ScopeNone
	ss.mu.Lock()
	r.Changed = r.Tripped != ss.tripped
	ss.tripped = r.Tripped
	ss.mu.Unlock()
	p.opts.Report(r)
}

// contentSeen marks the first content event of a stream (TTFT); the
// handler goroutine calls it.
func (w *watchdog) contentSeen(now time.Time) {
	if w.firstContent.IsZero() {
		w.firstContent = now
	}
}
