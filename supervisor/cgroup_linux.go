package supervisor

import "syscall"

// cgroupsAvailable: Linux has cgroups; openCgroupTree looks for a
// writable v2 hierarchy.
func cgroupsAvailable() error { return nil }

// intoCgroup has the child start in the cgroup whose directory is open as
// fd (clone3's CLONE_INTO_CGROUP).
func intoCgroup(attr *syscall.SysProcAttr, fd int) error {
	attr.UseCgroupFD, attr.CgroupFD = true, fd
	return nil
}
