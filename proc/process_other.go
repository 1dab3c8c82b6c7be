//go:build !linux

package proc

// BecomeSubreaper is unsupported: orphans are re-parented to init
// (launchd on darwin). A supervisor in pgroup mode still finds them by
// their process group and environment tags in the process table.
func BecomeSubreaper() error {
	return &UnsupportedError{What: "the child subreaper", Why: "orphans go to init; escapees are found by their group and tags in the process table"}
}

// DescriptorFile is unsupported: another process's descriptors are read
// from /proc/PID/fd, which only Linux has.
func DescriptorFile(int, int) (dev, ino uint64, err error) {
	return 0, 0, &UnsupportedError{What: "another process's open files", Why: "they are read from /proc/PID/fd"}
}

// OwnDescriptors lists the descriptors the calling process has open
// (/dev/fd: on FreeBSD it lists them all only where fdescfs is mounted),
// the listing's own included.
func OwnDescriptors() ([]int, error) { return numbers("/dev/fd") }

// Children is unsupported: a process's children are read from
// /proc/PID/task/TID/children, which only Linux has.
func Children(int) ([]int, error) {
	return nil, &UnsupportedError{What: "a process's children", Why: "they are read from /proc/PID/task/TID/children"}
}
