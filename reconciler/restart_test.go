package reconciler

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-units/hermes/units"
)

// TestRestartTellsTheTruth: when the new instance fails to spawn, Restart
// returns the spawn error exactly as Start does (restart used to print
// "restarted" and exit 0 while start exited 1), whether the unit was
// running, had exited, or is backing off, and whatever its restart policy.
func TestRestartTellsTheTruth(t *testing.T) {
	errSpawn := errors.New("spawn web: exec: no such file")
	for _, policy := range []units.Restart{units.RestartNo, units.RestartOnFailure} {
		for _, from := range []string{"running", "exited"} {
			t.Run(string(policy)+"/"+from, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					h := start(t, units.RoleGateway, spec("web", func(s *units.Spec) { s.Restart = policy }))
					synctest.Wait()
					if from == "exited" {
						h.fs.last(t, "web").exit(nil)
						synctest.Wait()
					}
					h.fs.mu.Lock()
					h.fs.fail["web"] = errSpawn
					h.fs.mu.Unlock()

					restartErr := h.r.Restart(context.Background(), "web")
					if !errors.Is(restartErr, errSpawn) {
						t.Errorf("Restart = %v, want the spawn error %v", restartErr, errSpawn)
					}
					startErr := h.r.Start(context.Background(), "web")
					if !errors.Is(startErr, errSpawn) {
						t.Errorf("Start = %v, want the spawn error %v", startErr, errSpawn)
					}
					if restartErr != nil && startErr != nil && restartErr.Error() != startErr.Error() {
						t.Errorf("Restart said %q, Start said %q; want the same error", restartErr, startErr)
					}
				})
			})
		}
	}
}

// TestRecoveredDropsRestartingIn: once the restart that followed a failure
// has begun, the unit's row no longer says "restarting in …" (a promise
// kept already); it keeps the failure that caused it.
func TestRecoveredDropsRestartingIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, units.RoleGateway, spec("web", func(s *units.Spec) { s.Restart = units.RestartOnFailure }))
		synctest.Wait()
		h.fs.last(t, "web").exit(errors.New("exit status 1"))
		synctest.Wait()
		if u := h.unit("web"); !strings.Contains(u.Error, "restarting in") {
			t.Fatalf("backing off: error %q, want it to say when it restarts", u.Error)
		}
		time.Sleep(2 * time.Second) // the backoff (1s, jitter ±) passes in the bubble's clock
		synctest.Wait()
		u := h.unit("web")
		if u.State != "running" || u.Restarts != 1 {
			t.Fatalf("after the backoff: state %s restarts %d, want running after 1 restart", u.State, u.Restarts)
		}
		if strings.Contains(u.Error, "restarting in") || !strings.Contains(u.Error, "exit status 1") {
			t.Errorf("recovered: error %q, want the last failure without \"restarting in\"", u.Error)
		}
	})
}
