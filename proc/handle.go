package proc

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// A Handle refers to one process: a signal sent through it reaches that
// process or none, however soon its pid is reused. OpenHandle it first,
// then check what the caller trusts (the identity's start time, or that a
// child is not reaped yet): a check made after OpenHandle holds for every
// Signal. Close releases it. On Linux it is a pidfd; on darwin it holds the
// start time read at OpenHandle, and Signal sends only while the pid still
// has that start time (see handle_other.go for the window that leaves).
//
// An exit file (ExitFile) becomes readable when its process exits, and is
// registered with the runtime's netpoller, so that a goroutine waiting for
// the exit is parked without an OS thread: a pidfd on Linux, a kqueue with
// the process's NOTE_EXIT on darwin and FreeBSD.

// ErrReaped: SignalChild found the child reaped; there is nobody to
// signal.
var ErrReaped = errors.New("the process has exited and been reaped")

// SignalChild sends sig to pid, the caller's own child, unless done (closed
// once it is reaped) is closed: then it returns ErrReaped. The handle is
// opened before done is checked, so the signal cannot reach a process that
// was given the pid after the reap.
func SignalChild(pid int, done <-chan struct{}, sig syscall.Signal) error {
	h, err := OpenHandle(pid)
	if err != nil {
		return err
	}
	defer h.Close()
	select {
	case <-done:
		return ErrReaped
	default:
	}
	return h.Signal(sig)
}

// ErrNotPollable reports an exit file the runtime's netpoller does not
// take: the caller waits another way (a blocking wait4) or not at all.
var ErrNotPollable = errors.New("exit file is not pollable")

// pollable wraps fd, made non-blocking by the caller, in a file named name
// and checks that the runtime's netpoller took it: deadlines are supported
// only on files it watches. When it did not, the file is closed and the
// error, about what ("pidfd of 12"), wraps ErrNotPollable.
func pollable(fd int, name, what string) (*os.File, error) {
	f := os.NewFile(uintptr(fd), name)
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", what, ErrNotPollable)
	}
	return f, nil
}
