package main

import (
	"testing"
	"time"
)

// TestTimespan checks show's time spans, as systemctl show writes them.
func TestTimespan(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "infinity"},
		{3 * time.Second, "3s"},
		{90 * time.Second, "1min 30s"},
		{1500 * time.Millisecond, "1s 500ms"},
		{2*time.Hour + 5*time.Second, "2h 5s"},
		{time.Nanosecond, "0"},
	} {
		if got := timespan(tc.d); got != tc.want {
			t.Errorf("timespan(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
