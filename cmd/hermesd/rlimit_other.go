//go:build !linux

package main

import "golang.org/x/sys/unix"

// readNoFile reads RLIMIT_NOFILE with getrlimit(2). A limit that does not fit
// (FreeBSD's RLIM_INFINITY, -1) reads as the largest.
func readNoFile() (soft, hard uint64, err error) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0, err
	}
	return uint64(lim.Cur), uint64(lim.Max), nil
}

// writeNoFile sets RLIMIT_NOFILE with x/sys/unix's setrlimit(2), which
// leaves the Go runtime's record of the limit it started with alone.
// darwin refuses a soft limit above kern.maxfilesperproc (EINVAL).
func writeNoFile(soft, hard uint64) error {
	var lim unix.Rlimit
	setLimit(&lim.Cur, soft)
	setLimit(&lim.Max, hard)
	return unix.Setrlimit(unix.RLIMIT_NOFILE, &lim)
}

// setLimit stores v in a limit of either width (uint64 on darwin, int64 on
// FreeBSD, where the largest value wraps to RLIM_INFINITY).
func setLimit[T int64 | uint64](dst *T, v uint64) { *dst = T(v) }
