package proc

import "errors"

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

// ErrNotPollable reports an exit file the runtime's netpoller does not
// take: the caller waits another way (a blocking wait4) or not at all.
var ErrNotPollable = errors.New("exit file is not pollable")
