package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/hermes-units/hermes/internal/exitcode"
	"golang.org/x/sys/unix"
)

// initEnv is set in the environment of the daemon that hermesd, started as
// the first process of a PID namespace, runs as its child: that child is
// the daemon, not an init again.
const initEnv = "HERMESD_INIT_CHILD"

// errReported: the daemon, run under hermesd's init, has said on stderr
// why it exited; the init exits with its code and says nothing more.
var errReported = errors.New("reported by the daemon")

// forwarded are the signals the init passes on to the daemon: a runtime's
// stop (TERM; INT from a terminal), and the rest a user may send to the
// container's first process expecting the daemon to get them.
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// asInit reports whether hermesd is the first process of its PID
// namespace (a container's entrypoint with no init of its own): it must
// then be that namespace's init.
func asInit() bool { return os.Getpid() == 1 && os.Getenv(initEnv) == "" }

// runInit is hermesd as PID 1. An init inherits every orphan of the
// namespace, not only those of the daemon's units: a process a `docker
// exec` or `kubectl exec` left behind is re-parented to it too, and only
// its parent can reap it. The daemon cannot be that parent: it waits for
// its own children by pid (the units' leaders, the death supervisor), and
// a wait for any child would take their exit from under it. So the first
// process stays a plain init, and the daemon runs as its only child (with
// the same arguments, stdio and environment): the init reaps every process
// the kernel gives it, forwards the runtime's signals to the daemon, and
// exits with the daemon's status (128+N when a signal N ended it) once the
// daemon is gone. The kernel then kills whatever is left in the namespace.
//
// The daemon is still the subreaper of its units' processes: what they
// orphan goes to it (and is contained), not to the init.
func runInit(args []string) error {
	sigs := make(chan os.Signal, 32)
	// SIGCHLD first: no exit may come before it is listened to.
	signal.Notify(sigs, append([]os.Signal{syscall.SIGCHLD}, forwarded...)...)
	defer signal.Stop(sigs)
	exe, err := os.Executable()
	if err != nil {
		return exit(exitcode.Failure, fmt.Errorf("as PID 1: find own executable to run the daemon: %w", err))
	}
	daemon, err := os.StartProcess(exe, append([]string{os.Args[0]}, args...), &os.ProcAttr{
		Env:   append(os.Environ(), initEnv+"=1"),
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		// A session of its own: the daemon's process group must be one
		// its namespace can name. The init's own group may have been made
		// outside the namespace (unshare's), where it reads as 0, which
		// the death supervisor would take for the owner's and refuse to
		// register any group as.
		Sys: &syscall.SysProcAttr{Setsid: true}, // detached-spawn: ok — the daemon is the init's only child, waited for, and its exit ends the namespace
	})
	if err != nil {
		return exit(exitcode.Failure, fmt.Errorf("as PID 1: start the daemon: %w", err))
	}
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			_ = daemon.Signal(sig) // fails only once the daemon is gone: its exit is the next SIGCHLD
			continue
		}
		if code, done := reapAll(daemon.Pid); done {
			if code == exitcode.Success {
				return nil
			}
			return exit(code, errReported)
		}
	}
	return nil // not reached: sigs is never closed
}

// reapAll reaps every child that has exited (one SIGCHLD may stand for
// many: signals of a kind do not queue). It reports the daemon's exit
// status when the daemon was among them.
func reapAll(daemon int) (code int, done bool) {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return code, done
		}
		if pid == daemon {
			code, done = ws.ExitStatus(), true
			if ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
		}
	}
}
