package control

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hermes-units/hermes/events"
)

func TestEventsHistory(t *testing.T) {
	bus := events.New(events.Options{History: 2})
	for _, u := range []string{"a", "b", "c"} {
		bus.Publish(events.Event{Kind: events.UnitState, Unit: u, State: "running"})
	}
	s := serve(t, NewServer(&fakeBackend{}, Options{Events: bus}))
	var got []string
	err := s.client.Events(t.Context(), EventOptions{}, func(e events.Event) error {
		got = append(got, e.Unit)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != "b" || got[1] != "c" {
		t.Errorf("history: got %v, want [b c] (the ring keeps 2)", got)
	}
}

// TestEventsFollow: history, then live events in order; a stream ends at
// once when the server shuts down, however long its grace.
func TestEventsFollow(t *testing.T) {
	bus := events.New(events.Options{})
	bus.Publish(events.Event{Kind: events.UnitState, Unit: "old"})
	s := serve(t, NewServer(&fakeBackend{}, Options{Events: bus, ShutdownTimeout: time.Hour}))
	got := make(chan events.Event, 10)
	done := make(chan error, 1)
	go func() {
		done <- s.client.Events(t.Context(), EventOptions{Follow: true}, func(e events.Event) error {
			got <- e
			return nil
		})
	}()
	if e := <-got; e.Unit != "old" || e.Seq != 1 {
		t.Fatalf("first event: got %+v, want the history's", e)
	}
	// The subscription exists once the history was sent.
	bus.Publish(events.Event{Kind: events.Cut, Provider: "p", Layer: "stale_stream"})
	bus.Publish(events.Event{Kind: events.BreakerTrip, Provider: "p", Streak: 3})
	for _, want := range []events.Kind{events.Cut, events.BreakerTrip} {
		if e := <-got; e.Kind != want {
			t.Fatalf("got %v, want %v", e.Kind, want)
		}
	}
	if err := s.stopServing(); err != nil {
		t.Errorf("Serve: %v", err)
	}
	if err := <-done; err != nil {
		t.Errorf("Events after shutdown: got %v, want nil (the stream ended)", err)
	}
}

// TestEventsSlowReader: a reader that stops reading never holds the
// publisher; it is dropped and told so by the overflow line.
func TestEventsSlowReader(t *testing.T) {
	bus := events.New(events.Options{Buffer: 4})
	s := serve(t, NewServer(&fakeBackend{}, Options{Events: bus}))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	first, hold := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		n := 0
		done <- s.client.Events(ctx, EventOptions{Follow: true}, func(events.Event) error {
			if n++; n == 1 {
				close(first)
				<-hold
			}
			return nil
		})
	}()
	bus.Publish(events.Event{Kind: events.UnitState, Unit: "x"})
	<-first
	// The reader is stuck; socket buffers fill, then the subscriber's.
	for bus.Dropped() == 0 {
		bus.Publish(events.Event{Kind: events.UnitState, Unit: "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"})
	}
	close(hold)
	if err := <-done; !errors.Is(err, ErrBehind) {
		t.Errorf("got %v, want ErrBehind", err)
	}
}

func TestEventsNone(t *testing.T) {
	s := serve(t, NewServer(&fakeBackend{}, Options{}))
	err := s.client.Events(t.Context(), EventOptions{}, func(events.Event) error { return nil })
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want an *Error saying there is no event stream", err)
	}
}
