package supervisor

import (
	"errors"
	"os"
	"runtime"

	"github.com/hermes-units/hermes/proc"
	"golang.org/x/sys/unix"
)

// Waiting for a process without an OS thread per process.
//
// A goroutine blocked in wait4 or poll holds its OS thread for as long as
// the process lives: one thread per unit. A pidfd instead becomes readable
// when its process exits, and registered with the runtime's netpoller
// (os.NewFile of a non-blocking fd) its waiter is a parked goroutine that
// holds no thread; one epoll wait serves them all. proc.ExitFile is that
// pidfd on Linux, and a kqueue holding the process's NOTE_EXIT on darwin.

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
// elsewhere in the process keeps its exit status). The wait parks on the
// child's exit file (proc.ExitFile: a pidfd on Linux, a kqueue on darwin);
// where none can be registered with the netpoller it falls back to a
// blocking wait4, which holds a thread. So does a wait the exit file ended
// before wait4 could reap: the process has exited, and the wait is short.
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
	if f, err := proc.ExitFile(pid); err == nil {
		done := false
		err = awaitExit(f, func(fd int) bool {
			done = reaped()
			// darwin's kqueue reports the exit once, and may report it
			// before wait4 can reap: the wait then ends on the event.
			return done || runtime.GOOS != "linux" && proc.Exited(fd)
		})
		f.Close()
		if err == nil && done {
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

// readable reports whether the exit file's descriptor fd is readable now
// (its process exited), without blocking.
func readable(fd int) bool { return proc.Exited(fd) }
