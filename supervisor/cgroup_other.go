//go:build !linux

package supervisor

import (
	"syscall"

	"github.com/hermes-units/hermes/proc"
)

// Cgroup mode is Linux's: elsewhere openCgroupTree fails with this, an
// owner asked for ModeCgroup fails with ErrNoCgroup, and the default is
// ModePGroup.
func cgroupsAvailable() error {
	return &proc.UnsupportedError{What: "cgroup mode", Why: "cgroups are Linux's; pgroup mode (process groups and environment tags) works without them"}
}

// intoCgroup is never reached without a cgroup tree; it says so if it is.
func intoCgroup(*syscall.SysProcAttr, int) error { return cgroupsAvailable() }

// cgroupEvents has no instance without cgroups: newCgroupEvents fails,
// and a stop then polls (it never needs to: no group has a cgroup here).
type cgroupEvents struct{}

func newCgroupEvents() (*cgroupEvents, error) { return nil, cgroupsAvailable() }

func (*cgroupEvents) watch(string) (<-chan struct{}, func(), error) {
	return nil, nil, cgroupsAvailable()
}

func (*cgroupEvents) close() {}
