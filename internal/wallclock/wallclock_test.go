package wallclock

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestFallback: the portable fallback reports a step of the wall clock
// (back or forward, of MinStep or more) within one interval, and nothing
// while the clocks agree or for slewing below MinStep. The wall clock is
// the bubble's plus an offset the test moves.
func TestFallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var offset atomic.Int64
		wall := func() time.Time { return time.Now().Round(0).Add(time.Duration(offset.Load())) }
		ctx, cancel := context.WithCancel(t.Context())
		var n atomic.Int32
		done := make(chan error, 1)
		go func() { done <- fallback(ctx, func() { n.Add(1) }, time.Second, wall) }()

		for _, tc := range []struct {
			name string
			step time.Duration
			want int32
		}{
			{"no step", 0, 0},
			{"slew below MinStep", MinStep / 2, 0},
			{"step back 10 minutes", -10 * time.Minute, 1},
			{"step forward 10 minutes", 10 * time.Minute, 1},
		} {
			n.Store(0)
			offset.Add(int64(tc.step))
			time.Sleep(time.Second + time.Millisecond) // one interval
			synctest.Wait()
			if got := n.Load(); got != tc.want {
				t.Errorf("%s: %d steps reported, want %d", tc.name, got, tc.want)
			}
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("fallback returned %v, want context.Canceled", err)
		}
	})
}
