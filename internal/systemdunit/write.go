package systemdunit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hermes-units/hermes/internal/safefile"
)

// Write puts files in dir, creating dir (0755) if it is missing. Every
// file is written atomically: a temporary file in dir, fsync, rename, then
// an fsync of dir, so systemd never reads a half-written unit.
//
// Without force, Write first checks that none of the files exists and
// fails with an error wrapping ErrExists (naming the first one) before
// writing anything. It stops at the first write error; the files written
// before it stay.
func Write(dir string, files []File, force bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if !force {
		for _, f := range files {
			p := filepath.Join(dir, f.Name)
			if _, err := os.Lstat(p); err == nil {
				return fmt.Errorf("%s: %w; pass --force to overwrite it", p, ErrExists)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%s: %w", p, err)
			}
		}
	}
	for _, f := range files {
		if err := writeAtomic(dir, f); err != nil {
			return err
		}
	}
	if err := safefile.SyncDir(dir); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

func writeAtomic(dir string, f File) error {
	if f.Name == "" || filepath.Base(f.Name) != f.Name {
		return fmt.Errorf("%w: file name %q", ErrValue, f.Name)
	}
	if err := safefile.Replace(filepath.Join(dir, f.Name), "."+f.Name+".tmp-*", f.Content, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(dir, f.Name), err)
	}
	return nil
}
