package control

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// maskerBackend is a fakeBackend that is also a Masker.
type maskerBackend struct{ *fakeBackend }

func (b maskerBackend) Mask(_ context.Context, unit string, now bool) error {
	b.record("mask %s now=%v", unit, now)
	return b.err
}

func (b maskerBackend) Unmask(_ context.Context, unit string) error {
	b.record("unmask %s", unit)
	return b.err
}

// TestMaskerRoutes: Client.Mask and Client.Unmask reach the Backend's
// Masker with the unit and the now flag, and its sentinels come back; a
// Backend that is no Masker answers CodeNoRoute.
func TestMaskerRoutes(t *testing.T) {
	b := maskerBackend{&fakeBackend{}}
	s := serve(t, NewServer(b, Options{}))
	ctx := t.Context()
	for _, now := range []bool{false, true} {
		if err := s.client.Mask(ctx, "web", now); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.client.Unmask(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	want := []string{"mask web now=false", "mask web now=true", "unmask web"}
	if got := b.Calls(); !slices.Equal(got, want) {
		t.Errorf("calls %q, want %q", got, want)
	}
	for _, sentinel := range []error{ErrUnknownUnit, ErrConflict} {
		b.err = sentinel
		if err := s.client.Mask(ctx, "web", true); !errors.Is(err, sentinel) {
			t.Errorf("Mask: got %v, want %v across the socket", err, sentinel)
		}
		if err := s.client.Unmask(ctx, "web"); !errors.Is(err, sentinel) {
			t.Errorf("Unmask: got %v, want %v across the socket", err, sentinel)
		}
	}
	if err := s.client.Mask(ctx, "", false); !errors.Is(err, ErrBadRequest) {
		t.Errorf("Mask of no name: got %v, want ErrBadRequest", err)
	}
	old := serve(t, NewServer(&fakeBackend{}, Options{}))
	var ce *Error
	if err := old.client.Unmask(ctx, "web"); !errors.As(err, &ce) || ce.Code != CodeNoRoute {
		t.Errorf("Unmask on a daemon without the route: got %v, want code %s", err, CodeNoRoute)
	}
}
