package control

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"golang.org/x/sys/unix"
)

// TestAdoptRoutes checks the ownership-transfer round trip, and that the
// caller's process group the backend sees is the peer's (SO_PEERCRED), not
// whatever the request body claimed.
func TestAdoptRoutes(t *testing.T) {
	b := &fakeBackend{}
	s := serve(t, NewServer(b, Options{}))
	ctx := t.Context()
	if _, err := s.client.Adopt(ctx, AdoptRequest{PGID: 42, As: "web", CallerPGID: 7}); err != nil {
		t.Fatalf("Adopt: %v", err)
	}
	if _, err := s.client.Adopt(ctx, AdoptRequest{PID: 43}); err != nil {
		t.Fatalf("Adopt: %v", err)
	}
	rep, err := s.client.Orphans(ctx, OrphansRequest{Adopt: true})
	if err != nil {
		t.Fatalf("Orphans: %v", err)
	}
	if rep.Orphans == nil || rep.Adopted == nil {
		t.Errorf("Orphans: got nil lists %+v, want empty arrays", rep)
	}
	if r, err := s.client.Release(ctx, "web"); err != nil || r.Unit != "web" {
		t.Errorf("Release: got %+v, %v; want unit web", r, err)
	}
	// The peer is this test process: its group, whatever the body said.
	pg := unix.Getpgrp()
	want := []string{
		fmt.Sprintf("adopt pid=0 pgid=42 as=web caller_pgid=%d", pg),
		fmt.Sprintf("adopt pid=43 pgid=0 as= caller_pgid=%d", pg),
		"orphans adopt=true",
		"release web",
	}
	if got := b.calls.All(); !reflect.DeepEqual(got, want) {
		t.Errorf("backend calls:\ngot  %q\nwant %q", got, want)
	}
}

func TestAdoptRequestChecked(t *testing.T) {
	s := serve(t, NewServer(&fakeBackend{}, Options{}))
	for name, req := range map[string]AdoptRequest{"neither": {}, "both": {PID: 1, PGID: 2}} {
		t.Run(name, func(t *testing.T) {
			if _, err := s.client.Adopt(t.Context(), req); !errors.Is(err, ErrBadRequest) {
				t.Errorf("Adopt(%+v): got %v, want ErrBadRequest", req, err)
			}
		})
	}
	if _, err := s.client.Release(t.Context(), ""); !errors.Is(err, ErrBadRequest) {
		t.Errorf("Release(\"\"): got %v, want ErrBadRequest", err)
	}
}

func TestRefusedAcrossSocket(t *testing.T) {
	s := serve(t, NewServer(&fakeBackend{err: fmt.Errorf("group 1: pgid must be > 1: %w", ErrRefused)}, Options{}))
	_, err := s.client.Adopt(t.Context(), AdoptRequest{PGID: 1})
	var ce *Error
	if !errors.Is(err, ErrRefused) || !errors.As(err, &ce) || ce.Code != CodeRefused || ce.Status != 422 {
		t.Fatalf("Adopt: got %v (%+v), want ErrRefused with code refused, status 422", err, ce)
	}
	if ce.Message != "group 1: pgid must be > 1: refused" {
		t.Errorf("message: got %q", ce.Message)
	}
}
