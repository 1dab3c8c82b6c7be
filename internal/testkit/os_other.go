//go:build !linux

package testkit

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
)

// Exchange is Linux's (renameat2's RENAME_EXCHANGE).
func Exchange(a, b string) error {
	return fmt.Errorf("swap %s and %s: no atomic exchange on %s: %w", a, b, runtime.GOOS, errors.ErrUnsupported)
}

// IntoCgroup is Linux's: there are no cgroups here.
func IntoCgroup(*exec.Cmd, int) error {
	return fmt.Errorf("start in a cgroup: no cgroups on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
