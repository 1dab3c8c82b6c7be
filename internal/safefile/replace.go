package safefile

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Replace puts data at path with permissions perm so that a reader sees
// the old file or the new one, never a part: a temporary file named by
// pattern (as os.CreateTemp reads it: created with O_EXCL, so no link is
// followed) in path's directory is written, fsynced and renamed over
// path. On failure path is as it was and the temporary file is gone. The
// rename outlives a power cut once the directory is synced (SyncDir).
func Replace(path, pattern string, data []byte, perm fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), pattern)
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// SyncDir fsyncs the directory dir: the files created, renamed or
// removed in it then outlive a power cut.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
