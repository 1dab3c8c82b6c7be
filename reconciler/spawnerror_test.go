package reconciler

import (
	"errors"
	"fmt"
	"os/exec"
	"testing"

	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
)

// TestSpawnError: the spawn error is wrapped with the unit only (the
// spawner already says "spawn"), and a program missing from PATH points at
// command: in the unit file.
func TestSpawnError(t *testing.T) {
	notFound := fmt.Errorf("spawn web: %w", &supervisor.NotFoundError{Name: "webd"})
	tests := []struct {
		name string
		spec units.Spec
		err  error
		want string
	}{
		{"not in PATH", units.Spec{Name: "web", File: "/u/web.yaml", Command: []string{"webd"}}, notFound,
			`unit web: spawn web: "webd" is not in PATH; install it, or write its absolute path in command: of /u/web.yaml`},
		{"not in PATH, no file", units.Spec{Name: "web", Command: []string{"webd"}}, notFound,
			`unit web: spawn web: "webd" is not in PATH; install it, or write its absolute path in command:`},
		{"other", units.Spec{Name: "web", File: "/u/web.yaml", Command: []string{"/x/webd"}}, fmt.Errorf("spawn web: %w", exec.ErrDot),
			"unit web: spawn web: " + exec.ErrDot.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := spawnError(tt.spec, tt.err)
			if got.Error() != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if !errors.Is(got, tt.err) {
				t.Errorf("%v does not wrap %v", got, tt.err)
			}
		})
	}
}
