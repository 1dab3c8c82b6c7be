package control

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/hermes-units/hermes/events"
)

// actor is a fakeBackend that is an Actor: its answers say what it did.
type actor struct {
	*fakeBackend
	answer ActionResult // Act's answer, Unit and Action left for the server to fill
}

func (a *actor) Act(_ context.Context, unit string, act Action) (ActionResult, error) {
	a.calls.Logf("act %s %s", act, unit)
	return a.answer, a.err
}

// TestActAnswers: the Server answers an action with Act's result when its
// Backend is an Actor (Unit and Action filled in), with the bare result
// through Start, Stop or Restart otherwise; errors cross the socket alike.
func TestActAnswers(t *testing.T) {
	answer := ActionResult{Stopped: []string{"api", "web"}, RunID: "backup-1"}
	for _, tc := range []struct {
		name    string
		backend Backend
		act     Action
		want    ActionResult
		call    string
	}{
		{"actor stop", &actor{fakeBackend: &fakeBackend{}, answer: answer}, ActionStop,
			ActionResult{Unit: "db", Action: "stop", Stopped: []string{"api", "web"}, RunID: "backup-1"}, "act stop db"},
		{"actor start", &actor{fakeBackend: &fakeBackend{}, answer: ActionResult{RunID: "backup-1"}}, ActionStart,
			ActionResult{Unit: "db", Action: "start", RunID: "backup-1"}, "act start db"},
		{"plain stop", &fakeBackend{}, ActionStop, ActionResult{Unit: "db", Action: "stop"}, "stop db"},
		{"plain restart", &fakeBackend{}, ActionRestart, ActionResult{Unit: "db", Action: "restart"}, "restart db"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := serve(t, NewServer(tc.backend, Options{}))
			got, err := s.client.Act(t.Context(), "db", tc.act)
			if err != nil {
				t.Fatalf("Act: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			var calls []string
			switch b := tc.backend.(type) {
			case *actor:
				calls = b.calls.All()
			case *fakeBackend:
				calls = b.calls.All()
			}
			if len(calls) != 1 || calls[0] != tc.call {
				t.Errorf("backend calls %q, want [%q]", calls, tc.call)
			}
		})
	}
	t.Run("error", func(t *testing.T) {
		s := serve(t, NewServer(&actor{fakeBackend: &fakeBackend{err: ErrUnknownUnit}}, Options{}))
		if _, err := s.client.Act(t.Context(), "db", ActionStart); !errors.Is(err, ErrUnknownUnit) {
			t.Errorf("got %v, want ErrUnknownUnit", err)
		}
	})
	t.Run("empty unit", func(t *testing.T) {
		s := serve(t, NewServer(&fakeBackend{}, Options{}))
		if _, err := s.client.Act(t.Context(), "", ActionStart); !errors.Is(err, ErrBadRequest) {
			t.Errorf("got %v, want ErrBadRequest", err)
		}
	})
}

// TestUnitWaitFields: what a client waiting for a start reads of a unit
// (type, probe, after, timeouts) crosses the socket under its JSON names.
func TestUnitWaitFields(t *testing.T) {
	u := Unit{Name: "web", State: "starting", Ownership: "owned", Type: "simple", Probe: "tcp 127.0.0.1:8080", After: []string{"db"},
		Timeouts: &Timeouts{Start: 90 * time.Second, Stop: 3 * time.Second, RuntimeMax: time.Hour}}
	s := serve(t, NewServer(&fakeBackend{status: Status{Units: []Unit{u}}}, Options{}))
	var m struct {
		Units []map[string]json.RawMessage `json:"units"`
	}
	if err := json.Unmarshal(getRaw(t, s.path, "/v1/status"), &m); err != nil || len(m.Units) != 1 {
		t.Fatalf("status: %v (%d units)", err, len(m.Units))
	}
	for k, want := range map[string]string{
		"type": `"simple"`, "probe": `"tcp 127.0.0.1:8080"`, "after": `["db"]`,
		"timeouts": `{"start_ns":90000000000,"stop_ns":3000000000,"runtime_max_ns":3600000000000}`,
	} {
		if got := string(m.Units[0][k]); got != want {
			t.Errorf("units[0].%s: got %s, want %s", k, got, want)
		}
	}
	st, err := s.client.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st.Units, []Unit{u}) {
		t.Errorf("got %+v, want %+v", st.Units, []Unit{u})
	}
}

// TestEventsOpened: Opened is called once the daemon has subscribed the
// stream: an event published from Opened itself is on it.
func TestEventsOpened(t *testing.T) {
	bus := events.New(events.Options{})
	bus.Publish(events.Event{Kind: events.UnitState, Unit: "before"})
	s := serve(t, NewServer(&fakeBackend{}, Options{Events: bus}))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	opened := 0
	var got []string
	err := s.client.Events(ctx, EventOptions{Follow: true, NoHistory: true, Opened: func() {
		opened++
		bus.Publish(events.Event{Kind: events.UnitState, Unit: "after"})
	}}, func(e events.Event) error {
		got = append(got, e.Unit)
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Events: got %v, want context.Canceled", err)
	}
	if opened != 1 || len(got) != 1 || got[0] != "after" {
		t.Errorf("Opened called %d times, events %q; want once, and [after]", opened, got)
	}
}
