package watch

import (
	"os"
	"syscall"
)

// dirID returns the identity of the directory at p, if p is one (following
// symbolic links, as the inotify watch does).
func dirID(p string) (fileID, bool) {
	fi, err := os.Stat(p)
	if err != nil || !fi.IsDir() {
		return fileID{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, true
	}
	return fileID{dev: st.Dev, ino: st.Ino}, true
}
