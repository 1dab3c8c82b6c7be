package main

import (
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
)

// TestStatusWarnings: records waiting for the ledger, the orphans no
// unit's evidence names, and what a gateway found of dead owners at its
// start, are shown under the supervisor line.
func TestStatusWarnings(t *testing.T) {
	tests := []struct {
		name string
		st   control.Status
		want []string
	}{
		{"ledger backlog", control.Status{Supervisor: control.Supervisor{Ledger: "3 ledger records wait in memory, not yet on disk (no space left on device)"}},
			[]string{"ledger:     warning: 3 ledger records wait in memory, not yet on disk (no space left on device)"}},
		{"orphans", control.Status{Supervisor: control.Supervisor{Orphans: []int{31, 57}}},
			[]string{"orphans:    groups 31, 57: re-parented to hermesd, no unit's (nothing names one); they die with hermesd"}},
		{"recovery", control.Status{Recovery: &control.Recovery{Ended: []control.EndedGroup{{Unit: "web", PID: 42, PGID: 42, Owner: 7}}, Leftovers: 2}},
			[]string{"recovery:   web: group 42 (pid 42) left by dead hermesd 7, ended before the unit started again",
				"recovery:   2 groups of dead owners still running; see `hermesctl adopt --orphans`"}},
		{"nothing to say", control.Status{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			writeStatus(&b, tt.st, look{now: time.Now()})
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("status output:\n%s\nwant a line %q", b.String(), w)
				}
			}
			if tt.want == nil && (strings.Contains(b.String(), "ledger:") || strings.Contains(b.String(), "recovery:")) {
				t.Errorf("status output:\n%s\nwant no ledger or recovery line", b.String())
			}
		})
	}
}
