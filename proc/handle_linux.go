package proc

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Handle is a pidfd.
type Handle struct {
	pid, fd int
}

// OpenHandle opens a pidfd of pid. For the caller's own unreaped child it
// names that very process (its pid cannot be reused before it is reaped);
// for any other pid the caller checks the identity after opening.
func OpenHandle(pid int) (*Handle, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	return &Handle{pid: pid, fd: fd}, nil
}

// Signal sends sig to the process (pidfd_send_signal): ESRCH once it has
// exited.
func (h *Handle) Signal(sig syscall.Signal) error {
	return unix.PidfdSendSignal(h.fd, sig, nil, 0)
}

// Close closes the pidfd.
func (h *Handle) Close() error { return unix.Close(h.fd) }

// ExitFile returns a pidfd of pid registered with the netpoller. For our
// own unreaped child it names that very process; for any other pid the
// caller checks the identity after opening. An error that is not
// ErrNotPollable means pid names no process.
func ExitFile(pid int) (*os.File, error) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if errors.Is(err, unix.EINVAL) { // PIDFD_NONBLOCK is Linux 5.10+
		if fd, err = unix.PidfdOpen(pid, 0); err == nil {
			err = unix.SetNonblock(fd, true)
			if err != nil {
				unix.Close(fd)
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("pidfd of %d: %w", pid, err)
	}
	return pollable(fd, fmt.Sprintf("pidfd:%d", pid), fmt.Sprintf("pidfd of %d", pid))
}

// Exited reports whether the exit file's descriptor fd is readable now
// (its process exited), without blocking.
func Exited(fd int) bool {
	for {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(p, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err != nil || n > 0
	}
}
