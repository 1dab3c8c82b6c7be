package units

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// checkLogDir reports, at load, a log.path whose directory would let
// another user redirect hermesd's writes: owned by another user (not root),
// or writable by group or others without the sticky bit. A missing
// directory is fine (hermesd creates it, mode 0700). hermesd checks again
// when it opens the log (logfile.CheckDir), and in a sticky directory such
// as /tmp that the file is its own; this is the early word with the fix.
func checkLogDir(path string) string {
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) || err != nil {
		return ""
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if euid := os.Geteuid(); int(st.Uid) != euid && st.Uid != 0 {
			return fmt.Sprintf("log directory %s is owned by uid %d, not by uid %d that runs hermesd: that user could swap the log for a link; choose a directory of your own, or fix it with `chown %d %s`",
				dir, st.Uid, euid, euid, shellWord(dir))
		}
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return fmt.Sprintf("log directory %s has mode %04o: other users can write it and it is not sticky, so they could swap the log for a link; choose a directory of your own, or fix it with `chmod go-w %s`",
			dir, perm, shellWord(dir))
	}
	return ""
}
