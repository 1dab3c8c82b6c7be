//go:build darwin || freebsd

package proc

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ExitFile returns a kqueue that has the exit (NOTE_EXIT) of pid to
// report, registered with the netpoller, which watches a kqueue as any
// other descriptor. The registration holds the process, not its pid, as a
// pidfd does. An error that is not ErrNotPollable means pid names no
// process (ESRCH).
func ExitFile(pid int) (*os.File, error) {
	kq, err := unix.Kqueue()
	if err != nil {
		return nil, fmt.Errorf("kqueue for %d: %w", pid, err)
	}
	unix.CloseOnExec(kq)
	ev := unix.Kevent_t{Ident: uint64(pid), Filter: unix.EVFILT_PROC, Flags: unix.EV_ADD | unix.EV_ONESHOT, Fflags: unix.NOTE_EXIT}
	if _, err := unix.Kevent(kq, []unix.Kevent_t{ev}, nil, nil); err != nil {
		unix.Close(kq)
		return nil, fmt.Errorf("watch the exit of %d: %w", pid, err)
	}
	if err := unix.SetNonblock(kq, true); err != nil {
		unix.Close(kq)
		return nil, fmt.Errorf("kqueue for %d: %w: %w", pid, ErrNotPollable, err)
	}
	return pollable(kq, fmt.Sprintf("kqueue:%d", pid), fmt.Sprintf("kqueue for %d", pid))
}

// Exited reports whether the exit file's kqueue fd holds the exit event
// now, without blocking. It takes the event: once it has said true, the
// caller is done with the file.
func Exited(fd int) bool {
	var evs [1]unix.Kevent_t
	for {
		n, err := unix.Kevent(fd, nil, evs[:], &unix.Timespec{})
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err != nil || n > 0
	}
}
