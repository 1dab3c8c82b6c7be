package supervisor

import (
	"testing"
	"time"
)

// TestScanRest: a timed scan comes escapeeScan after the last one began,
// unless the look that scanned took long enough that resting scanRest
// times as long after it ends later: then not before that rest is over,
// so that timed scans take at most a tenth of the janitor's time, up to
// looks of maxScanRest/scanRest; past that, the rest is maxScanRest.
func TestScanRest(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		took time.Duration // the look that scanned, begun at t0
		want time.Duration // the next timed scan, after t0
	}{
		{10 * time.Millisecond, escapeeScan},
		{100 * time.Millisecond, escapeeScan},
		{400 * time.Millisecond, 4 * time.Second},
		{2 * time.Second, 2*time.Second + maxScanRest},
	} {
		rest := scanRested(t0, t0.Add(c.took))
		if got := nextScan(t0, rest).Sub(t0); got != c.want {
			t.Errorf("a look of %v begun with the scan: next timed scan %v after it, want %v", c.took, got, c.want)
		}
		// The share of the janitor's time the scans take, from one's
		// start to the next's.
		if share := float64(c.took) / float64(c.want); c.took*scanRest <= maxScanRest && share > 1.0/(scanRest+1)+1e-9 {
			t.Errorf("a look of %v every %v: scans take %.0f%% of the time, want at most %.0f%%", c.took, c.want, share*100, 100.0/(scanRest+1))
		}
	}
	// No rest yet (no scan ran): the period alone.
	if got := nextScan(t0, time.Time{}); !got.Equal(t0.Add(escapeeScan)) {
		t.Errorf("without a rest: %v, want %v", got, t0.Add(escapeeScan))
	}
}
