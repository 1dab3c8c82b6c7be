//go:build !linux

package main

import (
	"errors"
	"fmt"
	"syscall"
)

// cgroupAttr: there are no cgroups here (newCgroup fails first, and the
// harness runs hermesd in pgroup mode); it says so if it is reached.
func cgroupAttr(int) (*syscall.SysProcAttr, error) {
	return nil, fmt.Errorf("start hermesd in a cgroup: %w", errors.ErrUnsupported)
}
