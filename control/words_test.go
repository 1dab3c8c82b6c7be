package control

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hermes-units/hermes/units"
)

// TestWireWords: the typed words of the wire (a unit's type and
// ownership, the daemon's role, the supervisor's health, an orphan's
// ownership and owner role, a kept group's ownership) are written as
// their plain strings, read back to the same bytes, and a word this
// build does not know is refused where it is read.
func TestWireWords(t *testing.T) {
	st := Status{
		Daemon:     Daemon{PID: 1, Role: units.RoleWorker},
		Supervisor: Supervisor{Mode: "pgroup", Health: Health{State: HealthFailing, Reason: "supervisor 12 exited: next try in 1s"}},
		Units:      []Unit{{Name: "m", State: StateDone, Type: units.Oneshot, Ownership: units.Adoptable}, {Name: "bad", State: StateError}},
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"role":"worker"`, `"health":"failing: supervisor 12 exited: next try in 1s"`, `"type":"oneshot"`, `"ownership":"adoptable"`, `"ownership":""`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("status JSON %s: want %s in it", b, want)
		}
	}
	var back Status
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if b2, _ := json.Marshal(back); !bytes.Equal(b, b2) {
		t.Errorf("read back and written again:\n%s\nwant\n%s", b2, b)
	}
	if back.Supervisor.Health.State != HealthFailing || back.Supervisor.Health.Well() {
		t.Errorf("health read back as %+v, want failing, not well", back.Supervisor.Health)
	}

	for _, tc := range []struct {
		name, json string
		into       any
		want       string
	}{
		{"unit type", `{"type":"notify"}`, &Unit{}, `unknown type "notify"`},
		{"unit ownership", `{"ownership":"owner"}`, &Unit{}, `unknown ownership "owner"`},
		{"step type", `{"unit":"a","type":""}`, &Step{}, `unknown type ""`},
		{"daemon role", `{"role":"boss"}`, &Daemon{}, `unknown role "boss"`},
		{"health", `{"health":"sick: very"}`, &Supervisor{}, `unknown supervisor health "sick"`},
		{"orphan role", `{"owner_role":"king"}`, &Orphan{}, `unknown role "king"`},
		{"kept ownership", `{"ownership":"forever"}`, &OwnRequest{}, `unknown ownership "forever"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := json.Unmarshal([]byte(tc.json), tc.into); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("reading %s: got %v, want %s", tc.json, err, tc.want)
			}
		})
	}
}
