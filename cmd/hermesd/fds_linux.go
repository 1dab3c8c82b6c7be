package main

import (
	"errors"
	"fmt"
	"math"

	"golang.org/x/sys/unix"
)

// cloexecInherited: see fds.go. close_range(2) marks them all at once;
// before Linux 5.11, one by one.
func cloexecInherited() error {
	err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("mark inherited descriptors close-on-exec: %w", err)
	}
	return cloexecListed()
}
