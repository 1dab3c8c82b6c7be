package proc

import (
	"fmt"
	"os"
	"strconv"
	"strings"

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

// Children lists the children of pid: those each of its threads forked,
// and the orphans re-parented to it (/proc/PID/task/TID/children). A
// child being re-parented at that moment may be in neither its old
// parent's list nor its new one's; a caller that walks a tree reads the
// subreaper's list again after the walk. pid gone is ErrGone.
func Children(pid int) ([]int, error) {
	dir := fmt.Sprintf("%s/%d/task", Root, pid)
	tids, err := numbers(dir)
	if err != nil {
		return nil, gone(pid, err)
	}
	var out []int
	for _, tid := range tids {
		b, err := os.ReadFile(dir + "/" + strconv.Itoa(tid) + "/children")
		if err != nil {
			continue // the thread ended
		}
		for f := range strings.FieldsSeq(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out, nil
}
