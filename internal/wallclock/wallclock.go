// Package wallclock tells when the wall clock steps: set by hand, by
// date(1), by an NTP client that steps rather than slews, or on resume from
// suspend. Timers in Go run on the monotonic clock, so a schedule computed
// in wall-clock time (a job's cron schedule) and armed as a duration is
// wrong after a step: stepped back ten minutes, a minutely job waits the
// ten minutes out. Whoever keeps such a schedule watches the steps and
// re-arms on each.
//
// On Linux the kernel says so without polling: a timerfd on
// CLOCK_REALTIME armed with TFD_TIMER_CANCEL_ON_SET fails its read with
// ECANCELED when the clock is set. The descriptor is read through the
// runtime's poller, so a waiting Watch holds no thread. Elsewhere a
// fallback compares the wall clock with the monotonic clock every
// FallbackInterval.
package wallclock

import (
	"context"
	"time"
)

// FallbackInterval is how often the fallback (systems without a timerfd)
// compares the two clocks; a step is noticed within it.
const FallbackInterval = 10 * time.Second

// MinStep is the smallest difference between the wall and monotonic
// clocks that the fallback reports as a step; smaller ones are slewing.
const MinStep = time.Second

// Watch calls stepped, from Watch's goroutine, after each step of the wall
// clock, until ctx ends; then it returns ctx's error. By the time stepped
// runs the watch is armed again, so a step that happens while stepped runs
// is reported too (reading the time in stepped sees at least that step).
// It returns another error when the kernel refuses the watch.
func Watch(ctx context.Context, stepped func()) error {
	return watch(ctx, stepped)
}

// fallback is the portable Watch: every interval it compares how far the
// wall clock (read by wall) moved with how far the monotonic clock did.
func fallback(ctx context.Context, stepped func(), interval time.Duration, wall func() time.Time) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	lastMono, lastWall := time.Now(), wall()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		nowMono, nowWall := time.Now(), wall()
		if d := nowWall.Sub(lastWall) - nowMono.Sub(lastMono); d >= MinStep || d <= -MinStep {
			stepped()
		}
		lastMono, lastWall = nowMono, nowWall
	}
}

// wallNow is the wall clock alone, without the monotonic reading.
func wallNow() time.Time { return time.Now().Round(0) }
