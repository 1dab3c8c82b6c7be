//go:build !linux

package supervisor

import (
	"errors"
	"syscall"

	"github.com/hermes-units/hermes/units"
)

// Setting another process's limits is Linux's (prlimit): elsewhere a unit
// with limits: fails to start, said.
func setRlimit(int, string, units.Rlimit) error { return errors.ErrUnsupported }

func asOwnerOf(_ *syscall.Credential, f func() error) error { return f() }
