package control

import (
	"errors"
	"testing"
)

// TestPaths: the daemon's paths travel over the socket as given; a daemon
// that does not report them answers CodeNoRoute, as an older one would.
func TestPaths(t *testing.T) {
	want := Paths{Config: "/c/hermes.yaml", Units: "/c/units", State: "/s", Socket: "/r/hermesd.sock", Logs: "/s/logs"}
	s := serve(t, NewServer(&fakeBackend{}, Options{Paths: want}))
	got, err := s.client.Paths(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Paths = %+v, want %+v", got, want)
	}
	old := serve(t, NewServer(&fakeBackend{}, Options{}))
	_, err = old.client.Paths(t.Context())
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != CodeNoRoute {
		t.Errorf("Paths of a daemon without them: %v, want an *Error of code %s", err, CodeNoRoute)
	}
}
