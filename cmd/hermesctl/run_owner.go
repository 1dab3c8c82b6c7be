package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
)

// The owner of a `hermesctl run`.
//
// hermesctl owns CMD's tree: whatever CMD starts dies with hermesctl. But
// hermesctl itself is started by someone (an agent in Python or Node, an
// IDE, a shell), and an agent killed with kill -9 leaves hermesctl running,
// and CMD with it. So hermesctl works for an owner: by default the process
// that started it (its parent), or the process --owner names. hermesctl
// watches it through an exit file (proc.ExitFile: a pidfd on Linux, a
// kqueue NOTE_EXIT on darwin and FreeBSD), which names that very process,
// never a later one with its pid; at the owner's exit, by any death,
// hermesctl closes its supervisor as at its own death: CMD's whole tree,
// escapees included, gets TERM, then KILL after the grace. --no-owner
// keeps hermesctl alone as the owner.
//
// An owner that is gone before the watch begins counts as dead, and CMD is
// not run at all: the parent is then init (getppid() is 1: under a
// container's init, say so with --no-owner; hermesctl as the init of its
// pid namespace has no parent and no owner to watch), the pid
// --owner names is not alive, or it was started after hermesctl (a pid
// recycled after the owner's death). A subreaper that took hermesctl in
// before it looked cannot be told from a parent: a caller that must be
// exact names itself with --owner.

// errOwnerGone is the error of an owner that is not alive.
var errOwnerGone = errors.New("has exited")

// ownerFlags are run's owner flags: --owner PID, --no-owner.
type ownerFlags struct {
	pid  int  // --owner; 0: hermesctl's parent
	none bool // --no-owner
}

// watchOwner starts the watch of the run's owner and returns a channel
// closed at its exit; nil (never closed) with --no-owner. The watch ends
// with ctx. An owner of another user, or one already gone, is an error
// (exitcode.Usage and exitcode.Failure), and CMD must not be run.
func watchOwner(ctx context.Context, f ownerFlags) (<-chan struct{}, error) {
	if f.none {
		if f.pid != 0 {
			return nil, &exitError{code: exitcode.Usage, err: errors.New("run: --owner and --no-owner do not go together: give one")}
		}
		return nil, nil
	}
	id, err := resolveOwner(f.pid)
	if err != nil || id.IsZero() {
		return nil, err
	}
	gone, err := supervisor.WatchExit(ctx, id)
	if errors.Is(err, proc.ErrGone) {
		return nil, ownerGoneError(f.pid, id.PID)
	}
	if err != nil {
		return nil, fmt.Errorf("run: cannot watch the owner, pid %d: %w (--no-owner runs CMD for hermesctl alone)", id.PID, err)
	}
	return gone, nil
}

// resolveOwner names the owner: pid, or hermesctl's parent when pid is 0.
// It is the zero Identity, no owner to watch, for a hermesctl that is the
// init of its pid namespace (a container's first process): no parent.
func resolveOwner(pid int) (proc.Identity, error) {
	named := pid != 0
	if !named {
		if pid = os.Getppid(); pid == 0 {
			return proc.Identity{}, nil
		}
	}
	if pid < 0 || named && pid <= 1 {
		return proc.Identity{}, &exitError{code: exitcode.Usage, err: fmt.Errorf("run: --owner %d: give the pid of a live process of yours, other than init", pid)}
	}
	if pid <= 1 { // re-parented to init: the parent that started hermesctl is gone
		return proc.Identity{}, ownerGoneError(0, pid)
	}
	// kill(pid, 0) asks the kernel whether hermesctl may signal pid: ESRCH
	// is no such process, EPERM one of another user.
	switch err := syscall.Kill(pid, 0); {
	case errors.Is(err, syscall.ESRCH):
		return proc.Identity{}, ownerGoneError(pid, pid)
	case errors.Is(err, syscall.EPERM):
		return proc.Identity{}, &exitError{code: exitcode.Usage, err: fmt.Errorf("run: --owner %d: a process of another user cannot own this run", pid)}
	}
	id, err := proc.Read(pid)
	if err != nil {
		return id, ownerGoneError(pid, pid)
	}
	if self, err := proc.Self(); err == nil && id.StartTime > self.StartTime {
		return id, ownerGoneError(pid, pid) // started after hermesctl: a recycled pid
	}
	return id, nil
}

// ownerGoneError says that the owner (named: the pid --owner gave, 0 for
// the parent) is gone before CMD ran.
func ownerGoneError(named, pid int) error {
	who := fmt.Sprintf("the owner, pid %d,", named)
	if named == 0 {
		who = fmt.Sprintf("the process that started hermesctl (its parent is now pid %d)", pid)
	}
	return &exitError{code: exitcode.Failure, err: fmt.Errorf("run: %s %w: CMD is not run (--no-owner runs it for hermesctl alone)", who, errOwnerGone)}
}
