package testkit

import (
	"fmt"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// MountTmpfs mounts a tmpfs of size bytes (mode 0700, nosuid, nodev) on
// dir, an empty directory, for tests that fill a file system; the test's
// cleanup unmounts it. Mounting needs root (CI runs as root): the caller
// skips on an error, saying what then covers the case.
func MountTmpfs(t testing.TB, dir string, size int) error {
	t.Helper()
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size="+strconv.Itoa(size)+",mode=0700"); err != nil {
		return fmt.Errorf("mount a tmpfs of %d bytes on %s: %w", size, dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount the tmpfs on %s: %v", dir, err)
		}
	})
	return nil
}
