package control

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
)

// runsBackend is a fakeBackend that is also a RunRegistrar; each release
// sends the run's id on released.
type runsBackend struct {
	*fakeBackend
	released chan string
}

func newRunsBackend() runsBackend {
	return runsBackend{&fakeBackend{}, make(chan string, 4)}
}

func (b runsBackend) RegisterRun(_ context.Context, req RunRequest) (RunRegistration, func(), error) {
	b.calls.Logf("register budget=%s wrapup=%q", req.Budget, req.WrapUp)
	if b.err != nil {
		return RunRegistration{}, nil, b.err
	}
	return RunRegistration{ID: "run-1", BaseURL: "http://127.0.0.1:7411/run/run-1/v1", Deadline: time.Unix(100, 0).UTC()},
		func() { b.released <- "run-1" }, nil
}

// EndRun ends run-1 as its release does, recorded.
func (b runsBackend) EndRun(_ context.Context, id string) (bool, error) {
	b.calls.Logf("end %s", id)
	if id != "run-1" {
		return false, nil
	}
	b.released <- id
	return true, nil
}

// waitRelease waits for the daemon side to release a run.
func (b runsBackend) waitRelease(t *testing.T, why string) {
	t.Helper()
	testkit.Receive(t, 10*time.Second, b.released, "%s: the run is still registered", why)
}

// TestRunRoute: Client.RegisterRun reaches the Backend's RunRegistrar with
// the budget and notice and returns its registration; the run stays
// registered while the request is open, and is released when the client
// releases it, when the client's ctx ends, and when the server shuts
// down. Errors travel; a Backend that is no RunRegistrar answers
// CodeNoRoute.
func TestRunRoute(t *testing.T) {
	b := newRunsBackend()
	s := serve(t, NewServer(b, Options{}))
	ctx := t.Context()

	reg, release, err := s.client.RegisterRun(ctx, RunRequest{Budget: 2 * time.Second, WrapUp: "wrap up"})
	if err != nil {
		t.Fatal(err)
	}
	want := RunRegistration{ID: "run-1", BaseURL: "http://127.0.0.1:7411/run/run-1/v1", Deadline: time.Unix(100, 0).UTC()}
	if reg != want {
		t.Errorf("got registration %+v, want %+v", reg, want)
	}
	if got := b.calls.All(); !slices.Equal(got, []string{`register budget=2s wrapup="wrap up"`}) {
		t.Errorf("calls %q, want one registration with the budget and notice", got)
	}
	// Another request meanwhile: the held one takes no other's connection.
	if _, err := s.client.Status(ctx); err != nil {
		t.Fatal(err)
	}
	if id, ok := testkit.Ready(b.released); ok {
		t.Fatalf("run %s released while the client holds it", id)
	}
	release()
	b.waitRelease(t, "after release")

	cctx, cancel := context.WithCancel(ctx)
	if _, _, err := s.client.RegisterRun(cctx, RunRequest{Budget: time.Second}); err != nil {
		t.Fatal(err)
	}
	cancel()
	b.waitRelease(t, "after the client's ctx ended")

	b.err = ErrConflict
	if _, _, err := s.client.RegisterRun(ctx, RunRequest{Budget: time.Second}); !errors.Is(err, ErrConflict) {
		t.Errorf("proxy off: got %v, want ErrConflict across the socket", err)
	}
	b.err = nil
	if _, _, err := s.client.RegisterRun(ctx, RunRequest{}); !errors.Is(err, ErrBadRequest) {
		t.Errorf("no budget: got %v, want ErrBadRequest", err)
	}
	for _, spent := range []time.Duration{-time.Second, time.Second, time.Hour} {
		if _, _, err := s.client.RegisterRun(ctx, RunRequest{Budget: time.Second, Spent: spent}); !errors.Is(err, ErrBadRequest) {
			t.Errorf("a budget of 1s with %v spent: got %v, want ErrBadRequest", spent, err)
		}
	}

	old := serve(t, NewServer(&fakeBackend{}, Options{}))
	var ce *Error
	if _, _, err := old.client.RegisterRun(ctx, RunRequest{Budget: time.Second}); !errors.As(err, &ce) || ce.Code != CodeNoRoute {
		t.Errorf("a daemon without the route: got %v, want code %s", err, CodeNoRoute)
	}

	// Shutdown ends the registration at once, not after the grace.
	_, release, err = s.client.RegisterRun(ctx, RunRequest{Budget: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	began := time.Now()
	if err := s.stopServing(); err != nil {
		t.Errorf("Serve: got %v, want nil", err)
	}
	b.waitRelease(t, "after shutdown")
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("shutdown took %v with a run registered, want it ended at once", d)
	}
}

// TestEndRunRoute: Client.EndRun reaches the Backend's EndRun and returns
// once it has (the release is seen before EndRun returns); a run that is
// not registered is no error, and says so.
func TestEndRunRoute(t *testing.T) {
	b := newRunsBackend()
	s := serve(t, NewServer(b, Options{}))
	ended, err := s.client.EndRun(t.Context(), "run-1")
	if err != nil || !ended {
		t.Fatalf("EndRun(run-1) = %v, %v; want true, nil", ended, err)
	}
	if _, ok := testkit.Ready(b.released); !ok {
		t.Error("EndRun returned before the backend released the run")
	}
	if ended, err := s.client.EndRun(t.Context(), "run-2"); err != nil || ended {
		t.Errorf("EndRun(run-2), not registered = %v, %v; want false, nil", ended, err)
	}
	if _, err := s.client.EndRun(t.Context(), ""); !errors.Is(err, ErrBadRequest) {
		t.Errorf("EndRun(\"\") = %v, want ErrBadRequest", err)
	}
	if got := b.calls.All(); !slices.Equal(got, []string{"end run-1", "end run-2"}) {
		t.Errorf("calls %q", got)
	}
}
