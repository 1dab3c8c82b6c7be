package importer

import (
	"strings"
	"testing"
)

// TestSystemdSpans: the time spans with a hermes limit read alike: a
// span within it is mapped, infinity and 0 turn the limit off (left out,
// or what hermes has instead), one above it is noted and left out, and so
// is one that does not parse.
func TestSystemdSpans(t *testing.T) {
	runtimeMax := func(f File) string { return orZero(f.Timeouts).RuntimeMax }
	watchdog := func(f File) string { return orZero(f.Timeouts).Watchdog }
	timeoutStart := func(f File) string { return orZero(f.Timeouts).Start }
	startInterval := func(f File) string { return orZero(f.StartLimit).Interval }
	tests := []struct {
		key, value string
		want       func(f File) string
		wantNote   string // a part of the note on the key; "" for none
	}{
		{"Service.RuntimeMaxSec", "90s", runtimeMax, ""},
		{"Service.RuntimeMaxSec", "infinity", runtimeMax, ""},
		{"Service.RuntimeMaxSec", "1000d", runtimeMax, "longest runtime_max"},
		{"Service.RuntimeMaxSec", "soon", runtimeMax, "soon"},
		{"Service.WatchdogSec", "20s", watchdog, ""},
		{"Service.WatchdogSec", "0", watchdog, ""},
		{"Service.WatchdogSec", "1000d", watchdog, "longest watchdog"},
		{"Service.TimeoutStartSec", "45s", timeoutStart, ""},
		{"Service.TimeoutStartSec", "infinity", timeoutStart, "infinity: hermes waits at most"},
		{"Service.TimeoutStartSec", "1000d", timeoutStart, "longest start timeout"},
		{"Unit.StartLimitIntervalSec", "120", startInterval, ""},
		{"Unit.StartLimitIntervalSec", "0", startInterval, "turns the start limit off"},
		{"Unit.StartLimitIntervalSec", "1000d", startInterval, "longest start limit interval"},
	}
	wants := map[string]string{"90s": "1m30s", "20s": "20s", "45s": "45s", "120": "2m"}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			section, key, _ := strings.Cut(tt.key, ".")
			src := "[Service]\nExecStart=/bin/true\n"
			src = "[" + section + "]\n" + key + "=" + tt.value + "\n" + src
			res, err := Import(Systemd, []Source{{Path: "api.service", Data: []byte(src)}})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Units) != 1 {
				t.Fatalf("got %d units, want 1", len(res.Units))
			}
			if got, want := tt.want(res.Units[0].File), wants[tt.value]; tt.wantNote == "" && got != want {
				t.Errorf("mapped to %q, want %q", got, want)
			}
			var notes []string
			for _, n := range res.Notes {
				if n.Key == tt.key {
					notes = append(notes, n.Why)
				}
			}
			switch {
			case tt.wantNote == "" && len(notes) > 0:
				t.Errorf("notes %q, want none", notes)
			case tt.wantNote != "" && (len(notes) != 1 || !strings.Contains(notes[0], tt.wantNote)):
				t.Errorf("notes %q, want one saying %q", notes, tt.wantNote)
			}
		})
	}
}

// orZero is *p, or the zero value when p is nil (a block left out).
func orZero[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
