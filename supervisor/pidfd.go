package supervisor

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Waiting for a process without an OS thread per process.
//
// A goroutine blocked in wait4 or poll holds its OS thread for as long as
// the process lives: one thread per unit. A pidfd instead becomes readable
// when its process exits, and registered with the runtime's netpoller
// (os.NewFile of a non-blocking fd) its waiter is a parked goroutine that
// holds no thread; one epoll wait serves them all.

// errNotPollable: the pidfd could not be registered with the netpoller.
var errNotPollable = errors.New("pidfd is not pollable")

// openPidfd returns a pidfd of pid registered with the netpoller. For our
// own unreaped child it names that very process (its pid cannot be reused
// before we reap it); for any other pid the caller checks the identity
// after opening.
func openPidfd(pid int) (*os.File, error) {
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
	f := os.NewFile(uintptr(fd), fmt.Sprintf("pidfd:%d", pid))
	// Deadlines are supported only on files the netpoller watches.
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		f.Close()
		return nil, fmt.Errorf("pidfd of %d: %w", pid, errNotPollable)
	}
	return f, nil
}

// awaitExit parks the calling goroutine until done reports true. done is
// called at once, then each time the pidfd f becomes readable (its process
// exited); it is given f's descriptor. It returns nil once done reported
// true, os.ErrDeadlineExceeded when f's read deadline passed (a caller's
// cancellation), or the error of f.
func awaitExit(f *os.File, done func(fd int) bool) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Read(func(fd uintptr) bool { return done(int(fd)) })
}

// reapChild waits for our child pid to exit and reaps it with wait4: only
// this pid, never another (the owner owns every wait: an os/exec child
// elsewhere in the process keeps its exit status). The wait parks on a
// pidfd; where none can be registered with the netpoller it falls back to
// a blocking wait4, which holds a thread.
func reapChild(pid int) (unix.WaitStatus, error) {
	var ws unix.WaitStatus
	var werr error
	reaped := func() bool {
		for {
			wpid, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
			switch {
			case errors.Is(err, unix.EINTR):
				continue
			case err != nil:
				werr = err
				return true
			}
			return wpid == pid
		}
	}
	if f, err := openPidfd(pid); err == nil {
		err = awaitExit(f, func(int) bool { return reaped() })
		f.Close()
		if err == nil {
			return ws, werr
		}
	}
	for {
		_, err := unix.Wait4(pid, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return ws, err
	}
}

// readable reports whether the pidfd fd is readable now (its process
// exited), without blocking.
func readable(fd int) bool {
	for {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(p, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err != nil || n > 0
	}
}
