//go:build !linux

package wallclock

import "context"

// watch compares the clocks every FallbackInterval: no timerfd here.
func watch(ctx context.Context, stepped func()) error {
	return fallback(ctx, stepped, FallbackInterval, wallNow)
}
