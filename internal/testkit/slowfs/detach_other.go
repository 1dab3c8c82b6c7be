//go:build !linux

package slowfs

import "golang.org/x/sys/unix"

// detach forces dir's unmount.
func detach(dir string) error { return unix.Unmount(dir, unix.MNT_FORCE) }
