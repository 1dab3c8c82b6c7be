package reconciler

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/units"
)

// TestResetFailed: a unit failed by its start limit becomes inactive, its
// error and restarts forgotten, and is not started (nor later); Start
// then starts it. A unit backing off has its restart cancelled. An
// unknown unit is an error; one that is not failed is left as it is.
func TestResetFailed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, units.RoleGateway,
			restarting(units.RestartAlways, time.Second, 2),
			spec("back", func(s *units.Spec) { s.Restart = units.RestartOnFailure }),
			spec("ok"))
		synctest.Wait()
		for range 2 {
			h.fail("svc", 2*time.Second)
		}
		if u := h.unit("svc"); u.State != control.StateFailed || !errors.Is(h.unitErr("svc"), ErrStartLimit) {
			t.Fatalf("state %s error %q, want failed by the start limit", u.State, u.Error)
		}
		h.fs.last(t, "back").exit(errExit1) // backing off, a restart in a second
		synctest.Wait()
		for _, n := range []string{"svc", "back", "ok"} {
			if err := h.r.ResetFailed(t.Context(), n); err != nil {
				t.Fatalf("reset-failed %s: %v", n, err)
			}
		}
		for _, n := range []string{"svc", "back"} {
			if u := h.unit(n); u.State != control.StateInactive || u.Error != "" || u.Restarts != 0 {
				t.Errorf("%s after reset-failed: state %s error %q restarts %d; want inactive, no error, 0 restarts", n, u.State, u.Error, u.Restarts)
			}
		}
		if u := h.unit("ok"); u.State != control.StateRunning {
			t.Errorf("ok after reset-failed: state %s, want running (untouched)", u.State)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if s, b := len(h.fs.spawnTimes("svc")), len(h.fs.spawnTimes("back")); s != 2 || b != 1 {
			t.Errorf("spawned svc %d and back %d times after reset-failed, want 2 and 1: nothing started", s, b)
		}
		if err := h.r.Start(t.Context(), "svc"); err != nil {
			t.Fatal(err)
		}
		if n := len(h.fs.spawnTimes("svc")); n != 3 {
			t.Errorf("spawned svc %d times after start, want 3", n)
		}
		if err := h.r.ResetFailed(t.Context(), "nope"); !errors.Is(err, control.ErrUnknownUnit) {
			t.Errorf("reset-failed of an unknown unit: got %v, want ErrUnknownUnit", err)
		}
	})
}
