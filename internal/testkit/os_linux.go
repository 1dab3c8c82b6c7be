package testkit

import (
	"fmt"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// What tests do that only Linux can; os_other.go says so elsewhere, with
// an error matching errors.ErrUnsupported.

// Exchange swaps the paths a and b atomically (renameat2 with
// RENAME_EXCHANGE), as deploy tools swap a directory for its new version.
func Exchange(a, b string) error {
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
		return fmt.Errorf("swap %s and %s: %w", a, b, err)
	}
	return nil
}

// IntoCgroup has cmd start in the cgroup whose directory is open as fd
// (CLONE_INTO_CGROUP), keeping the rest of its SysProcAttr.
func IntoCgroup(cmd *exec.Cmd, fd int) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
	return nil
}
