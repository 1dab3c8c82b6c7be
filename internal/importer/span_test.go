package importer

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestSystemdValues: the time spans with a hermes limit, and the exec and
// limit keys, read alike: a value hermes takes is mapped (infinity and 0
// turn a span's limit off: left out, or what hermes has instead); one
// above the limit is noted and left out, and so is one that does not
// parse.
func TestSystemdValues(t *testing.T) {
	timeouts := func(get func(Timeouts) string) func(File) string {
		return func(f File) string { return get(orZero(f.Timeouts)) }
	}
	tests := []struct {
		key    string
		get    func(f File) string
		mapped map[string]string // value → what it maps to; absent: left out
		noted  map[string]string // value → a part of its note; absent: none
	}{
		{"Service.RuntimeMaxSec", timeouts(func(t Timeouts) string { return t.RuntimeMax }),
			map[string]string{"90s": "1m30s", "infinity": ""}, map[string]string{"1000d": "longest runtime_max", "soon": "soon"}},
		{"Service.WatchdogSec", timeouts(func(t Timeouts) string { return t.Watchdog }),
			map[string]string{"20s": "20s", "0": ""}, map[string]string{"1000d": "longest watchdog"}},
		{"Service.TimeoutStartSec", timeouts(func(t Timeouts) string { return t.Start }),
			map[string]string{"45s": "45s", "infinity": "24h"}, map[string]string{"infinity": "infinity: hermes waits at most", "1000d": "longest start timeout"}},
		{"Unit.StartLimitIntervalSec", func(f File) string { return orZero(f.StartLimit).Interval },
			map[string]string{"120": "2m"}, map[string]string{"0": "turns the start limit off", "1000d": "longest start limit interval"}},
		{"Service.UMask", func(f File) string { return f.Umask },
			map[string]string{"0027": "0027"}, map[string]string{"1000": "not an octal mask", "rw": "not an octal mask"}},
		{"Service.Nice", func(f File) string { return nonZero(orZero(f.Nice)) },
			map[string]string{"-5": "-5"}, map[string]string{"20": "not a niceness from -20 to 19"}},
		{"Service.MemoryMax", func(f File) string { return f.MemoryMax },
			map[string]string{"512M": "512M"}, map[string]string{"infinity": "memory_max takes bytes", "0": "memory_max takes bytes"}},
		{"Service.CPUWeight", func(f File) string { return nonZero(f.CPUWeight) },
			map[string]string{"100": "100"}, map[string]string{"0": "cpu_weight takes 1 to", "heavy": "cpu_weight takes 1 to"}},
		{"Service.CPUQuota", func(f File) string { return f.CPUMax },
			map[string]string{"50%": "50%"}, map[string]string{"50": "cpu_max takes a percentage", "0%": "cpu_max takes a percentage"}},
		{"Service.TasksMax", func(f File) string { return nonZero(f.TasksMax) },
			map[string]string{"64": "64"}, map[string]string{"infinity": "tasks_max takes a number of tasks"}},
		{"Service.LimitNOFILE", func(f File) string { return f.Limits["nofile"] },
			map[string]string{"1024:4096": "1024:4096"}, map[string]string{"4K": "limits.nofile takes a number"}},
	}
	for _, tt := range tests {
		values := maps.Clone(tt.noted)
		maps.Copy(values, tt.mapped)
		for _, value := range slices.Sorted(maps.Keys(values)) {
			t.Run(tt.key+"="+value, func(t *testing.T) {
				check(t, tt.key, value, tt.get, tt.mapped[value], tt.noted[value])
			})
		}
	}
}

// nonZero is n in decimal, or "" for 0 (left out).
func nonZero(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// check imports a service whose key (Section.Key) is value: it must map
// (get) to want, and the key must have one note holding wantNote, or with
// wantNote "" none.
func check(t *testing.T, key, value string, get func(File) string, want, wantNote string) {
	section, k, _ := strings.Cut(key, ".")
	src := "[" + section + "]\n" + k + "=" + value + "\n[Service]\nExecStart=/bin/true\n"
	res, err := Import(Systemd, []Source{{Path: "api.service", Data: []byte(src)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Units) != 1 {
		t.Fatalf("got %d units, want 1", len(res.Units))
	}
	if got := get(res.Units[0].File); got != want {
		t.Errorf("mapped to %q, want %q", got, want)
	}
	var notes []string
	for _, n := range res.Notes {
		if n.Key == key {
			notes = append(notes, n.Why)
		}
	}
	switch {
	case wantNote == "" && len(notes) > 0:
		t.Errorf("notes %q, want none", notes)
	case wantNote != "" && (len(notes) != 1 || !strings.Contains(notes[0], wantNote)):
		t.Errorf("notes %q, want one saying %q", notes, wantNote)
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
