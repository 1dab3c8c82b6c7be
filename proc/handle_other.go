//go:build !linux

package proc

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Handle is a pid and the start time it had at OpenHandle. There is no
// pidfd: Signal reads the start time again and sends with kill(2) only if
// it is unchanged. That leaves a window between the check and the kill of
// a few microseconds, in which the process would have to exit, be reaped,
// and its pid be handed to a new process for the signal to miss; darwin
// hands out pids in increasing order, so the pid comes back only after
// the whole range has been used. For the caller's own unreaped child there
// is no window at all: its pid cannot be reused before it is reaped.
type Handle struct {
	pid   int
	start uint64
}

// OpenHandle reads pid's start time: ErrGone when there is no process.
func OpenHandle(pid int) (*Handle, error) {
	st, err := ReadStat(pid)
	if err != nil {
		return nil, err
	}
	return &Handle{pid: pid, start: st.StartTime}, nil
}

// Signal sends sig to the process if its pid still has the start time it
// had at OpenHandle: ESRCH (wrapped in ErrGone) once it has exited, or
// when the pid is another process's.
func (h *Handle) Signal(sig syscall.Signal) error {
	st, err := ReadStat(h.pid)
	if errors.Is(err, ErrGone) {
		return fmt.Errorf("%w (%w)", err, unix.ESRCH)
	}
	if err != nil {
		return err
	}
	if st.StartTime != h.start {
		return fmt.Errorf("pid %d: now another process's: %w (%w)", h.pid, ErrGone, unix.ESRCH)
	}
	return unix.Kill(h.pid, sig)
}

// Close releases nothing: the handle holds no descriptor.
func (h *Handle) Close() error { return nil }
