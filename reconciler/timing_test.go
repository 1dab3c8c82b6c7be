package reconciler

import (
	"testing"
	"time"

	"github.com/hermes-units/hermes/units"
)

func TestBackoff(t *testing.T) {
	s := time.Second
	tests := []struct {
		name      string
		base, max time.Duration
		attempt   int
		rnd       float64
		want      time.Duration
	}{
		{"first", s, 30 * s, 0, 0, s},
		{"doubles", s, 30 * s, 1, 0, 2 * s},
		{"doubles again", s, 30 * s, 3, 0, 8 * s},
		{"capped", s, 30 * s, 5, 0, 30 * s},
		{"capped far out", s, 30 * s, 500, 0, 30 * s},
		{"jitter adds up to a tenth", s, 30 * s, 2, 0.5, 4*s + 200*time.Millisecond},
		{"jitter on the cap", s, 30 * s, 9, 0.999, 30*s + 2997*time.Millisecond},
		{"zero base floored", 0, 0, 0, 0, MinRestartDelay},
		{"max below base", 2 * s, s, 3, 0, 2 * s},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Backoff(tt.base, tt.max, tt.attempt, tt.rnd); got != tt.want {
				t.Errorf("Backoff(%v, %v, %d, %v) = %v, want %v", tt.base, tt.max, tt.attempt, tt.rnd, got, tt.want)
			}
		})
	}
	// Bounds for any jitter.
	for attempt := range 8 {
		for _, rnd := range []float64{0, 0.1, 0.5, 0.9, 0.99999} {
			d := min(s<<attempt, 30*s)
			got := Backoff(s, 30*s, attempt, rnd)
			if got < d || got > d+d/10 {
				t.Errorf("Backoff(attempt %d, rnd %v) = %v, want within [%v, %v]", attempt, rnd, got, d, d+d/10)
			}
		}
	}
}

func TestStartLimitHit(t *testing.T) {
	t0 := time.Unix(1000, 0)
	lim := units.StartLimit{Burst: 3, Interval: time.Minute}
	at := func(secs ...int) []time.Time {
		var out []time.Time
		for _, s := range secs {
			out = append(out, t0.Add(time.Duration(s)*time.Second))
		}
		return out
	}
	tests := []struct {
		name     string
		starts   []time.Time
		now      time.Time
		lim      units.StartLimit
		want     bool
		wantKept int
	}{
		{"none yet", nil, t0, lim, false, 0},
		{"below burst", at(0, 10), t0.Add(20 * time.Second), lim, false, 2},
		{"burst reached", at(0, 10, 20), t0.Add(30 * time.Second), lim, true, 3},
		{"old starts leave the window", at(0, 10, 20), t0.Add(65 * time.Second), lim, false, 2},
		{"no limit", at(0, 1, 2, 3, 4), t0.Add(5 * time.Second), units.StartLimit{}, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, kept := StartLimitHit(tt.starts, tt.now, tt.lim)
			if got != tt.want || len(kept) != tt.wantKept {
				t.Errorf("StartLimitHit = %v (kept %d), want %v (kept %d)", got, len(kept), tt.want, tt.wantKept)
			}
		})
	}
}

func TestStable(t *testing.T) {
	if Stable(10*time.Second, 30*time.Second) {
		t.Errorf("a 10s run counted as stable with a 30s max")
	}
	if !Stable(30*time.Second, 30*time.Second) {
		t.Errorf("a 30s run not counted as stable with a 30s max")
	}
}
