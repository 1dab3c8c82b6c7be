package slowfs

import "syscall"

// detach unmounts dir lazily: it goes once no process uses it.
func detach(dir string) error { return syscall.Unmount(dir, syscall.MNT_DETACH) }
