package control

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// enablerBackend is a fakeBackend that is also an Enabler.
type enablerBackend struct{ *fakeBackend }

func (b enablerBackend) Disable(_ context.Context, unit string) error {
	b.record("disable %s", unit)
	return b.err
}

func (b enablerBackend) Enable(_ context.Context, unit string, start bool) error {
	b.record("enable %s start=%v", unit, start)
	return b.err
}

// TestEnablerRoutes: Client.Disable and Client.Enable reach the Backend's
// Enabler with the unit and the start flag, and its sentinels come back; a
// Backend that is no Enabler answers CodeNoRoute.
func TestEnablerRoutes(t *testing.T) {
	b := enablerBackend{&fakeBackend{}}
	s := serve(t, NewServer(b, Options{}))
	ctx := t.Context()
	if err := s.client.Disable(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	for _, start := range []bool{true, false} {
		if err := s.client.Enable(ctx, "web", start); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"disable web", "enable web start=true", "enable web start=false"}
	if got := b.Calls(); !slices.Equal(got, want) {
		t.Errorf("calls %q, want %q", got, want)
	}
	for _, sentinel := range []error{ErrUnknownUnit, ErrConflict} {
		b.err = sentinel
		if err := s.client.Disable(ctx, "web"); !errors.Is(err, sentinel) {
			t.Errorf("Disable: got %v, want %v across the socket", err, sentinel)
		}
		if err := s.client.Enable(ctx, "web", true); !errors.Is(err, sentinel) {
			t.Errorf("Enable: got %v, want %v across the socket", err, sentinel)
		}
	}
	if err := s.client.Disable(ctx, ""); !errors.Is(err, ErrBadRequest) {
		t.Errorf("Disable of no name: got %v, want ErrBadRequest", err)
	}

	old := serve(t, NewServer(&fakeBackend{}, Options{}))
	var ce *Error
	if err := old.client.Disable(ctx, "web"); !errors.As(err, &ce) || ce.Code != CodeNoRoute {
		t.Errorf("Disable on a daemon without the route: got %v, want code %s", err, CodeNoRoute)
	}
}
