package control

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-units/hermes/internal/testkit/openapitest"
	"github.com/hermes-units/hermes/timeouts"
	"github.com/hermes-units/hermes/units"
)

// TestWireWords: the typed words of the wire (a unit's type and
// ownership, the daemon's role, the supervisor's health, an orphan's
// ownership and owner role, a kept group's ownership and state, the
// supervisor's mode, a job's result, a breaker's scope) are written as
// their plain strings, read back to the same bytes, and a word this
// build does not know is refused where it is read.
func TestWireWords(t *testing.T) {
	st := Status{
		Daemon:     Daemon{PID: 1, Role: units.RoleWorker},
		Supervisor: Supervisor{Mode: units.ModePGroup, Health: Health{State: HealthFailing, Reason: "supervisor 12 exited: next try in 1s"}},
		Units: []Unit{{Name: "m", State: StateDone, Type: units.Oneshot, Ownership: units.Adoptable,
			Job: &Job{Result: ResultBudgetExceeded, Runs: map[JobResult]int{ResultSuccess: 2, ResultBudgetExceeded: 1}}}, {Name: "bad", State: StateError}},
		Owned: []OwnedGroup{{Name: "agent", Ownership: units.PersistOnRelease, State: OwnedPersisting}},
		Proxy: &Proxy{Breakers: []Breaker{{Session: "s", TrippedBy: timeouts.ScopeProvider, Tripped: true}, {Session: "closed"}}},
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"role":"worker"`, `"health":"failing: supervisor 12 exited: next try in 1s"`, `"type":"oneshot"`, `"ownership":"adoptable"`, `"ownership":""`,
		`"mode":"pgroup"`, `"result":"budget exceeded"`, `"runs":{"budget exceeded":1,"success":2}`, `"state":"persisting"`,
		`"session":"s","provider":"","model":"","streak":0,"provider_streak":0,"tripped_by":"provider","threshold":0`,
		`"session":"closed","provider":"","model":"","streak":0,"provider_streak":0,"threshold":0`} {
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
		{"supervisor mode", `{"mode":"jail"}`, &Supervisor{}, `unknown supervisor mode "jail"`},
		{"job result", `{"result":"crashed"}`, &Job{}, `unknown job result "crashed"`},
		{"job runs", `{"runs":{"crashed":1}}`, &Job{}, `unknown job result "crashed"`},
		{"kept group state", `{"state":"lost"}`, &OwnedGroup{}, `unknown kept group state "lost"`},
		{"breaker scope", `{"tripped_by":"session"}`, &Breaker{}, `unknown scope "session"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := json.Unmarshal([]byte(tc.json), tc.into); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("reading %s: got %v, want %s", tc.json, err, tc.want)
			}
		})
	}
}

// TestOpenAPIWords: the enums of docs/openapi.yaml for the typed words
// of the wire list exactly their tables' words.
func TestOpenAPIWords(t *testing.T) {
	doc, _ := openapitest.Load(t, openAPIFile)
	for _, tc := range []struct {
		schema, prop string
		want         []string
	}{
		{"Job", "result", jobResults.Words()},
		{"OwnedGroup", "state", ownedStates.Words()},
		{"Supervisor", "mode", []string{string(units.ModeCgroup), string(units.ModePGroup)}},
		{"Breaker", "tripped_by", []string{timeouts.ScopeModel.String(), timeouts.ScopeProvider.String()}},
	} {
		s := doc.Components.Schemas[tc.schema]
		if s == nil || s.Value.Properties[tc.prop] == nil {
			t.Errorf("no %s.%s in %s", tc.schema, tc.prop, openAPIFile)
			continue
		}
		var got []string
		for _, e := range s.Value.Properties[tc.prop].Value.Enum {
			w, _ := e.(string)
			got = append(got, w)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s.%s: enum %q, want the words %q", tc.schema, tc.prop, got, tc.want)
		}
	}
}
