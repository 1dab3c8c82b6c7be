package reconciler

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

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
