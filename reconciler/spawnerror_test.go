package reconciler

import (
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"syscall"
	"testing"

	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
)

// TestSpawnError: the spawn error is wrapped with the unit only (the
// spawner already says "spawn"), a program missing from PATH points at
// command: in the unit file, and a spawn that found hermesd's descriptor
// table full points at hermesd's limit, not at the unit.
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
		{"out of descriptors", units.Spec{Name: "web", Command: []string{"sleep"}}, fmt.Errorf("spawn web: %w", &fs.PathError{Op: "fork/exec", Path: "/usr/bin/sleep", Err: syscall.EMFILE}),
			"unit web: spawn web: fork/exec /usr/bin/sleep: too many open files; " + fdFix},
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
