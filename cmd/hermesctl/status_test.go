package main

import (
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
)

// TestStatusColor checks the state words' colours and that colour does not
// move the columns: the script tests see only the colourless form.
func TestStatusColor(t *testing.T) {
	st := control.Status{Units: []control.Unit{
		{Name: "a", State: "running", PID: 1},
		{Name: "bb", State: "failed", PID: 22},
		{Name: "c", State: "inactive", PID: 333},
	}}
	var plain, color strings.Builder
	writeStatus(&plain, st, look{})
	writeStatus(&color, st, look{color: true})
	for _, tc := range []struct {
		name, want string
	}{
		{"running is green", green + "running" + reset},
		{"failed is red", red + "failed" + reset},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(color.String(), tc.want) {
				t.Errorf("coloured output lacks %q:\n%s", tc.want, color.String())
			}
		})
	}
	t.Run("inactive is not coloured", func(t *testing.T) {
		for _, line := range strings.Split(color.String(), "\n") {
			if strings.HasPrefix(line, "c ") && strings.Contains(line, "\x1b") {
				t.Errorf("inactive is coloured: %q", line)
			}
		}
	})
	t.Run("colour does not move columns", func(t *testing.T) {
		stripped := color.String()
		for _, c := range []string{green, red, yellow, reset} {
			stripped = strings.ReplaceAll(stripped, c, "")
		}
		if stripped != plain.String() {
			t.Errorf("coloured output without escapes:\n%s\nwant:\n%s", stripped, plain.String())
		}
	})
	t.Run("no colour when asked for none", func(t *testing.T) {
		if strings.Contains(plain.String(), "\x1b") {
			t.Errorf("plain output has escapes:\n%q", plain.String())
		}
	})
}

func TestHuman(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{42 * time.Second, "42s"},
		{3*time.Minute + 12*time.Second, "3m12s"},
		{2*time.Hour + 5*time.Minute + 59*time.Second, "2h05m"},
		{76 * time.Hour, "3d04h"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if got := human(tc.d); got != tc.want {
				t.Errorf("human(%v) = %q, want %q", tc.d, got, tc.want)
			}
		})
	}
}

func TestSize(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "-"},
		{900, "900B"},
		{1536, "1.5K"},
		{12897484, "12.3M"},
		{3 << 30, "3.0G"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if got := size(tc.n); got != tc.want {
				t.Errorf("size(%d) = %q, want %q", tc.n, got, tc.want)
			}
		})
	}
}

// TestStatusWhileLoading: a status answered while hermesd still reads
// its units directory says so, and for how long, rather than "no units".
func TestStatusWhileLoading(t *testing.T) {
	now := time.Now()
	var b strings.Builder
	writeStatus(&b, control.Status{Daemon: control.Daemon{PID: 7}, Units: []control.Unit{}, Loading: now.Add(-90 * time.Second)}, look{now: now})
	for _, want := range []string{"loading:    reading the units directory for 1m30s", "no units yet"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status while loading lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "no units\n") {
		t.Errorf("status while loading says there are no units:\n%s", b.String())
	}
}

// TestOneShot: a one-shot status collects no garbage below oneShotHeap,
// and the setting in force before is back once it is done.
func TestOneShot(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	limit := debug.SetMemoryLimit(-1) // reads it
	restore := oneShot()
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Errorf("GC percent while one-shot: %d, want -1 (off)", got)
	}
	if got := debug.SetMemoryLimit(-1); got != oneShotHeap {
		t.Errorf("memory limit while one-shot: %d, want %d", got, oneShotHeap)
	}
	restore()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GC percent after: %d, want 100 as before", got)
	}
	if got := debug.SetMemoryLimit(-1); got != limit {
		t.Errorf("memory limit after: %d, want %d as before", got, limit)
	}
}
