// Package logfile manages unit log files: opening them for a unit's stdout
// and stderr, rotating them by size, and reading them back (tail, follow, and
// a line stream for the log-line readiness probe).
//
// Every unit writes to its log file directly through a descriptor opened with
// O_APPEND, never through a pipe into hermesd: a survivor must outlive the
// daemon without a SIGPIPE or a stalled write (SPEC §3). Because writers keep
// their descriptor for their whole life, rotation is copy-then-truncate,
// done by the daemon on a timer: the current content is copied to path.1 and
// path is truncated to zero, after which every O_APPEND writer lands at the
// start of the now empty file.
//
// Bytes a writer appends between the end of the copy and the truncation are
// lost; Rotate keeps that window as short as it can by copying until the file
// stops growing before it truncates. This is the trade every copytruncate
// scheme makes for writers it cannot signal.
package logfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// Modes of log files and of the directories Open creates: logs can hold
// secrets printed by units, so only the owner reads them.
const (
	FileMode fs.FileMode = 0o600
	DirMode  fs.FileMode = 0o700
)

// Open opens the log file at path for appending, creating it (mode 0600) and
// its missing parent directories (mode 0700) first. The returned file is
// meant to be handed to a child as its stdout and stderr; the caller closes
// its own copy once the child has started. Hand the *os.File itself to
// exec.Cmd.Stdout and Stderr: os/exec then passes the descriptor to the
// child, whereas any other io.Writer makes it insert a pipe and a copying
// goroutine in the daemon, which is what survivors must never have.
func Open(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), DirMode); err != nil {
		return nil, fmt.Errorf("create log directory for %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, FileMode)
	if err != nil {
		return nil, fmt.Errorf("open log file: %w", err)
	}
	return f, nil
}

// Rotate rotates the log file at path if it is larger than maxSize bytes and
// reports whether it did. With keep > 0 it first shifts path.1 … path.(keep-1)
// to path.2 … path.keep (the oldest, path.keep, is overwritten), then copies
// path to path.1; with keep == 0 it only truncates. Finally it truncates path
// in place, so processes holding an O_APPEND descriptor keep writing into the
// same file, now from offset 0.
//
// A missing path is not an error: there is nothing to rotate. Rotate is not
// safe to call concurrently for the same path; the daemon calls it from one
// timer goroutine.
func Rotate(path string, maxSize int64, keep int) (bool, error) {
	if keep < 0 {
		return false, fmt.Errorf("rotate %s: keep is %d, want >= 0", path, keep)
	}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("rotate log: %w", err)
	}
	if fi.Size() <= maxSize {
		return false, nil
	}
	if keep > 0 {
		for i := keep - 1; i >= 1; i-- {
			err := os.Rename(numbered(path, i), numbered(path, i+1))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return false, fmt.Errorf("rotate log: %w", err)
			}
		}
		if err := copyFile(path, numbered(path, 1)); err != nil {
			return false, fmt.Errorf("rotate log %s: %w", path, err)
		}
	}
	if err := os.Truncate(path, 0); err != nil {
		return false, fmt.Errorf("rotate log: %w", err)
	}
	return true, nil
}

func numbered(path string, i int) string { return path + "." + strconv.Itoa(i) }

// copyFile copies src to dst through a temporary file renamed into place, so
// that dst is never seen half written. It copies until src stops growing to
// narrow the window in which appended bytes are lost to the truncation.
func copyFile(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(FileMode); err != nil {
		return err
	}
	if _, err := io.Copy(tmp, in); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}
