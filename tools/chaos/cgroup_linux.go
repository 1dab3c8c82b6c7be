package main

import "syscall"

// cgroupAttr has a child start in the cgroup whose directory is open as fd
// (CLONE_INTO_CGROUP).
func cgroupAttr(fd int) (*syscall.SysProcAttr, error) {
	return &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}, nil
}
