// Package logfile manages unit log files: opening them for a unit's stdout
// and stderr, keeping them within log.max_size × (log.keep + 1) bytes on
// disk, and reading them back (tail, follow, and a line stream for the
// log-line readiness probe).
//
// A survivor (adoptable under a gateway, persist_on_release) writes to its
// log file directly through a descriptor opened with O_APPEND, never
// through a pipe into hermesd: it must outlive the daemon without a
// SIGPIPE or a stalled write (SPEC §3). An owned unit dies with hermesd,
// so hermesd may (reconciler Options.StampOutput) make its stdout and
// stderr pipes that it drains into the file, each line a record with the
// time it was read and its stream (Copy, Record). hermesd cannot move a direct writer to a new file, so
// rotation is in place: Logs watches each log with inotify and, on the
// write that crosses max_size, Rotate copies the last max_size bytes to
// path.1 (only when the file system has room for them; else they are
// dropped and reported) and truncates path, after which every O_APPEND
// writer lands at the start of the now empty file. The bound and its slack
// are in Logs.
//
// Every file here is opened without following a symbolic link in its final
// component (internal/safefile), and a log in a directory other users can
// write is refused unless the directory is sticky and the file is ours
// (CheckDir, Open).
package logfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/hermes-units/hermes/internal/safefile"
)

// Modes of log files and of the directories Open creates: logs can hold
// secrets printed by units, so only the owner reads them.
const (
	FileMode fs.FileMode = 0o600
	DirMode  fs.FileMode = 0o700
)

// ErrUnsafeDir marks a log directory another user could use to redirect
// hermesd's writes: writable by others without the sticky bit, or owned by
// another user (not root).
var ErrUnsafeDir = errors.New("unsafe log directory")

// CheckDir checks the directory dir that is to hold a log file. A missing
// directory is fine (Open creates it, mode 0700). It refuses, with an error
// wrapping ErrUnsafeDir that says how to fix it, a directory owned by
// another user than the effective one or root, and one that group or others
// may write unless it is sticky (like /tmp). shared reports the sticky,
// writable-by-others case: Open then also checks the file is ours.
func CheckDir(dir string) (shared bool, err error) {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("log directory: %w", err)
	}
	if !fi.IsDir() {
		return false, fmt.Errorf("log directory %s is not a directory; choose another log.path", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if euid := os.Geteuid(); int(st.Uid) != euid && st.Uid != 0 {
			return false, fmt.Errorf("%w: %s belongs to uid %d, not to uid %d that runs hermesd; that user could swap the log for a link: choose a directory of your own for log.path, or fix it with: chown %d %s",
				ErrUnsafeDir, dir, st.Uid, euid, euid, safefile.Quote(dir))
		}
	}
	perm := fi.Mode().Perm()
	if perm&0o022 == 0 {
		return false, nil
	}
	if fi.Mode()&fs.ModeSticky == 0 {
		return false, fmt.Errorf("%w: %s has mode %04o: other users can write it and it is not sticky, so they could swap the log for a link; choose a directory of your own for log.path, or fix it with: chmod go-w %s",
			ErrUnsafeDir, dir, perm, safefile.Quote(dir))
	}
	return true, nil
}

// Open opens the log file at path for appending, creating it (mode 0600) and
// its missing parent directories (mode 0700) first. It never follows a link
// at path, opens only a regular file, refuses a directory CheckDir refuses,
// and in a shared sticky directory (/tmp) refuses a file that is not ours
// (another owner, or hard links). The returned file is meant to be handed to
// a child as its stdout and stderr; the caller closes its own copy once the
// child has started. Hand the *os.File itself to exec.Cmd.Stdout and Stderr:
// os/exec then passes the descriptor to the child, whereas any other
// io.Writer makes it insert a pipe and a copying goroutine in the daemon,
// which is what survivors must never have.
func Open(path string) (*os.File, error) {
	return open(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE)
}

func open(path string, flag int) (*os.File, error) {
	dir := filepath.Dir(path)
	shared, err := CheckDir(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return nil, fmt.Errorf("create log directory for %s: %w", path, err)
	}
	f, err := safefile.OpenFile(path, flag, FileMode)
	if err != nil {
		return nil, fmt.Errorf("open log file: %w", err)
	}
	if shared {
		if err := safefile.CheckOwn(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("open log file: %w", err)
		}
	}
	return f, nil
}

// Rotate rotates the log file at path, which writers append to directly, if
// it is larger than maxSize bytes, and reports whether it did. With keep > 0
// it first shifts path.1 … path.(keep-1) to path.2 … path.keep (the oldest,
// path.keep, is dropped), then copies the last maxSize bytes of path to
// path.1; with keep == 0 it only truncates. Finally it truncates path in
// place, so processes holding an O_APPEND descriptor keep writing into the
// same file, now from offset 0.
//
// The copy is made only when the file system has room for it (it never
// needs more than maxSize bytes, the room the dropped path.keep gave back);
// without room the content is dropped and ErrNoRoom returned after the
// truncation, so that the log stays bounded. Bytes appended between the end
// of the copy and the truncation are lost: the price of rotating writers
// that cannot be told to reopen. Nothing here follows a link at path or at
// a numbered name.
//
// A missing path is not an error: there is nothing to rotate. Rotate is not
// safe to call concurrently for the same path (Logs serialises it).
func Rotate(path string, maxSize int64, keep int) (bool, error) {
	if keep < 0 {
		return false, fmt.Errorf("rotate %s: keep is %d, want >= 0", path, keep)
	}
	f, err := safefile.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("rotate log: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("rotate log: %w", err)
	}
	if fi.Size() <= maxSize {
		return false, nil
	}
	var kept error
	if keep > 0 {
		if err := shift(path, keep); err != nil {
			return false, err
		}
		kept = copyTail(f, fi.Size(), maxSize, numbered(path, 1))
	}
	if err := f.Truncate(0); err != nil {
		return false, fmt.Errorf("rotate log: %w", err)
	}
	return true, kept
}

// ErrNoRoom: a rotation dropped the rotated content for want of free space.
var ErrNoRoom = errors.New("no room on the file system for the rotated log")

// shift renames path.(keep-1) … path.1 one number up, dropping path.keep.
// rename(2) moves a link itself, never its target.
func shift(path string, keep int) error {
	for i := keep - 1; i >= 1; i-- {
		err := os.Rename(numbered(path, i), numbered(path, i+1))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rotate log: %w", err)
		}
	}
	return nil
}

func numbered(path string, i int) string { return path + "." + strconv.Itoa(i) }

// copyTail copies the last max bytes of in (of size size) to dst through a
// temporary file renamed into place, so that dst is never seen half
// written, and only when the file system has room for them.
func copyTail(in *os.File, size, max int64, dst string) (err error) {
	n := min(size, max)
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(int(in.Fd()), &sfs); err == nil && int64(sfs.Bavail)*int64(sfs.Bsize) < n {
		return fmt.Errorf("rotate log %s: %w (%d bytes needed): the rotated content was dropped; free space on that file system", in.Name(), ErrNoRoom, n)
	}
	tmp, err := safefile.OpenFile(fmt.Sprintf("%s.%d.tmp", dst, os.Getpid()), os.O_WRONLY|os.O_CREATE|os.O_EXCL, FileMode)
	if err != nil {
		return fmt.Errorf("rotate log: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := io.Copy(tmp, io.NewSectionReader(in, size-n, n)); err != nil {
		return fmt.Errorf("rotate log %s: %w", in.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("rotate log %s: %w", in.Name(), err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("rotate log: %w", err)
	}
	return nil
}
