package reconciler

import (
	"time"

	"github.com/hermes-units/hermes/units"
)

// Timing defaults for fields a unit leaves at zero. The units loader normally
// applies the configured defaults first; these only keep a zero from turning
// into a busy loop or an instant KILL.
const (
	// MinRestartDelay is the smallest delay between two starts of a unit.
	MinRestartDelay = 100 * time.Millisecond
	// DefaultStopGrace is the grace between the stop signal and KILL when a
	// unit sets none.
	DefaultStopGrace = 3 * time.Second
	// probeInterval is how often a tcp or http readiness probe retries while
	// a unit is starting (the kernel gives no event for "now listening").
	probeInterval = 100 * time.Millisecond
)

// Backoff is the delay before the restart that follows attempt consecutive
// failed runs (attempt 0 is the first restart): base doubled attempt times,
// capped at most, then stretched by a jitter of up to a tenth, so that
// units that failed together do not restart in lockstep. rnd is in [0, 1).
// The result lies in [d, d+d/10] where d = min(base·2^attempt, most).
func Backoff(base, most time.Duration, attempt int, rnd float64) time.Duration {
	base = max(base, MinRestartDelay)
	most = max(most, base)
	d := base
	for i := 0; i < attempt && d < most; i++ {
		d *= 2
	}
	d = min(d, most)
	rnd = max(rnd, 0)
	if rnd >= 1 {
		rnd = 0.999999
	}
	return d + time.Duration(rnd*float64(d/10))
}

// StartLimitHit reports whether one more start at now would exceed the limit:
// Burst starts already happened within the Interval that ends at now. A zero
// Burst or Interval means no limit. It also returns the starts still inside
// the window, which the caller keeps.
func StartLimitHit(starts []time.Time, now time.Time, lim units.StartLimit) (bool, []time.Time) {
	if lim.Burst <= 0 || lim.Interval <= 0 {
		return false, nil
	}
	var kept []time.Time
	for _, s := range starts {
		if now.Sub(s) < lim.Interval {
			kept = append(kept, s)
		}
	}
	return len(kept) >= lim.Burst, kept
}

// Stable reports whether a run that lasted ran resets the backoff doubling:
// it stayed up at least as long as the longest backoff.
func Stable(ran, max time.Duration) bool { return max > 0 && ran >= max }
