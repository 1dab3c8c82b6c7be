//go:build !linux

package testkit

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
)

// MountTmpfs is Linux's (tmpfs_linux.go): here it fails, and the caller
// skips.
func MountTmpfs(t testing.TB, dir string, size int) error {
	return fmt.Errorf("mount a tmpfs of %d bytes on %s: no tmpfs mount on %s: %w", size, dir, runtime.GOOS, errors.ErrUnsupported)
}
