package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"
)

// cloexecInherited marks every descriptor above stderr close-on-exec, once,
// before hermesd opens anything. Go opens its own descriptors close-on-exec,
// but those hermesd inherited from whoever started it (a shell script's
// flock, a leaky terminal, systemd's LISTEN_FDS) are not, and would pass to
// every unit and to the death supervisor: a unit would then hold its
// grandparent's lock or pipe end for as long as it runs. Units get exactly
// fds 0, 1 and 2. Called from run before anything else. Linux marks them
// all in one call (fds_linux.go); elsewhere, and before Linux 5.11, they
// are marked one by one (cloexecListed).

// cloexecListed marks the descriptors above stderr that the process has
// open close-on-exec, one by one. The listing's own descriptor is
// close-on-exec already, so marking it too is harmless.
func cloexecListed() error {
	fds, err := proc.OwnDescriptors()
	if err != nil {
		return fmt.Errorf("mark inherited descriptors close-on-exec: %w", err)
	}
	for _, fd := range fds {
		if fd <= 2 {
			continue
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && !errors.Is(err, unix.EBADF) {
			return fmt.Errorf("mark descriptor %d close-on-exec: %w", fd, err)
		}
	}
	return nil
}

// modeEnv forces the supervisor's containment mode, like the hidden flag
// --supervisor-mode (the flag wins): "cgroup", "pgroup", or empty for the
// automatic choice (cgroup where a writable cgroup v2 hierarchy exists).
// Tests use it to run the pgroup fallback on a machine with cgroups; a user
// may use it to rule cgroup mode out.
const modeEnv = "HERMES_SUPERVISOR_MODE"

// addModeFlag defines the hidden --supervisor-mode on fs; resolveMode reads
// it back, falling back to modeEnv.
func addModeFlag(fs *pflag.FlagSet) {
	fs.String("supervisor-mode", "", "force the supervisor's containment: cgroup or pgroup (env "+modeEnv+"; default automatic)")
	_ = fs.MarkHidden("supervisor-mode")
}

func resolveMode(fs *pflag.FlagSet) (supervisor.Mode, error) {
	v := os.Getenv(modeEnv)
	if f := fs.Lookup("supervisor-mode"); f != nil && f.Changed {
		v = f.Value.String()
	}
	return supervisor.ParseMode(v)
}
