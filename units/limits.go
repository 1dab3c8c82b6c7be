package units

import (
	"strings"
	"time"
)

// Bounds of the values a unit file or hermes.yaml may set. Every duration
// and every count is checked against its bound at load, so that no value
// reaches the daemon that would overflow its arithmetic (a restart_sec of
// 2562047h doubled and jittered wraps into a negative delay: immediate
// restarts) or make it do unbounded work (log.keep: 2000000000 is two
// billion renames per rotation). The bounds are far above any sensible
// setting; an error names the key, its position and the allowed range.
const (
	// MaxDelay bounds the restart backoff (restart_sec, restart_max_sec),
	// the start limit's interval and the timeouts of a unit other than
	// runtime_max (start, stop, watchdog).
	MaxDelay = 24 * time.Hour
	// MaxRuntime bounds timeouts.runtime_max and run budgets
	// (run_budget_seconds, agent.run_budget_seconds).
	MaxRuntime = 366 * 24 * time.Hour
	// MaxCallTimeout bounds the timeouts of LLM calls (stale timeouts,
	// hard cap, drain, tiers and floors).
	MaxCallTimeout = 24 * time.Hour
	// MaxBurst bounds start_limit.burst.
	MaxBurst = 1000
	// MaxKeep bounds log.keep, the rotated files kept per unit.
	MaxKeep = 100
	// MaxLogSize bounds log.max_size.
	MaxLogSize Size = 1 << 40
	// MaxTokens bounds a context tier's above_tokens.
	MaxTokens = 100_000_000
)

// durRange is what a duration key accepts: more than zero when positive
// (else zero too), and at most max.
type durRange struct {
	positive bool
	max      time.Duration
}

var (
	anyDelay      = durRange{positive: false, max: MaxDelay}
	someDelay     = durRange{positive: true, max: MaxDelay}
	anyRuntime    = durRange{positive: false, max: MaxRuntime}
	someRuntime   = durRange{positive: true, max: MaxRuntime}
	someCallLimit = durRange{positive: true, max: MaxCallTimeout}
)

// String is the range as the error shows it: "0s to 24h" or "more than 0s,
// at most 24h".
func (r durRange) String() string {
	if r.positive {
		return "more than 0s, at most " + FormatDuration(r.max)
	}
	return "0s to " + FormatDuration(r.max)
}

// FormatDuration writes d as a unit file's duration, without trailing zero
// units: "24h" (not 24h0m0s), "1m30s", "500ms".
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
