package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"runtime"

	"github.com/hermes-units/hermes/internal/diag"
	"github.com/hermes-units/hermes/supervisor"
	"golang.org/x/sys/unix"
)

// errNoShell: the death supervisor's shell is missing or cannot be run.
var errNoShell = errors.New("no shell for the death supervisor")

// checkShell makes sure the death supervisor can be started: it is a
// script run by the POSIX sh at path (supervisor.Shell). The supervisor
// starts with the first unit, so without this check an image with no sh
// (a scratch or distroless image) would start, then fail every unit.
func checkShell(path string) error {
	fi, err := os.Stat(path)
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("is a %s, not a program", fi.Mode().Type())
	}
	if err == nil {
		err = unix.Access(path, unix.X_OK)
	}
	if err == nil {
		return nil
	}
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		err = pe.Err
	}
	return &diag.Error{Kind: errNoShell, Where: path, What: err.Error(),
		Fix: "hermesd runs its death supervisor (what kills the units when hermesd dies) with a POSIX sh at " + path +
			": use an image that has one (alpine, busybox, debian-slim, distroless :debug), or add one at that path"}
}

// adviseMode says once, at start, that hermesd runs in pgroup mode on
// Linux because no writable cgroup v2 hierarchy was found where it asked
// for none (automatic, and no backend forced by supervisor.BackendEnv),
// and what would give it cgroup mode. Inside a
// container this is the common case: runtimes mount /sys/fs/cgroup
// read-only.
func adviseMode(log *slog.Logger, asked, got supervisor.Mode) {
	if runtime.GOOS != "linux" || asked != "" || got != supervisor.ModePGroup || os.Getenv(supervisor.BackendEnv) != "" {
		return
	}
	log.Warn("containment: pgroup mode (process groups, escapees found by scans), not cgroup mode: no writable cgroup v2 hierarchy for hermesd; "+
		"for cgroup mode (cgroup.kill: nothing a unit starts escapes), give hermesd a cgroup it may write: in a container, its own cgroup namespace with /sys/fs/cgroup mounted read-write "+
		"(podman run --cgroupns=private --security-opt unmask=/sys/fs/cgroup; docker run --cgroupns=private with a read-write cgroup mount, or --privileged; on Kubernetes only a privileged container has one), "+
		"outside one, a delegated cgroup v2 subtree (systemd Delegate=yes)",
		"mode", got)
}
