package proc

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// BecomeSubreaper makes the calling process the child subreaper
// (PR_SET_CHILD_SUBREAPER): an orphan among its descendants is re-parented
// to it, not to init, so it can still be found by its parent link and
// reaped.
func BecomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl PR_SET_CHILD_SUBREAPER: %w", err)
	}
	return nil
}

// DescriptorFile returns the device and inode of the regular file (or
// pipe) that pid holds open as descriptor fd (stat of /proc/PID/fd/FD). It
// fails when the descriptor is closed, is neither, or cannot be read
// (another user's process).
func DescriptorFile(pid, fd int) (dev, ino uint64, err error) {
	var st unix.Stat_t
	path := fmt.Sprintf("%s/%d/fd/%d", Root, pid, fd)
	if err := unix.Stat(path, &st); err != nil {
		return 0, 0, fmt.Errorf("stat %s: %w", path, err)
	}
	if m := st.Mode & unix.S_IFMT; m != unix.S_IFREG && m != unix.S_IFIFO {
		return 0, 0, fmt.Errorf("%s is not a regular file or a pipe", path)
	}
	return st.Dev, st.Ino, nil
}

// OwnDescriptors lists the descriptors the calling process has open
// (/proc/self/fd), the listing's own included.
func OwnDescriptors() ([]int, error) { return numbers(Root + "/self/fd") }
