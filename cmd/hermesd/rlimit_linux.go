package main

import "golang.org/x/sys/unix"

// readNoFile reads RLIMIT_NOFILE with prlimit(2).
func readNoFile() (soft, hard uint64, err error) {
	var lim unix.Rlimit
	if err := unix.Prlimit(0, unix.RLIMIT_NOFILE, nil, &lim); err != nil {
		return 0, 0, err
	}
	return lim.Cur, lim.Max, nil
}

// writeNoFile sets RLIMIT_NOFILE with prlimit(2).
func writeNoFile(soft, hard uint64) error {
	lim := unix.Rlimit{Cur: soft, Max: hard}
	return unix.Prlimit(0, unix.RLIMIT_NOFILE, &lim, nil)
}
