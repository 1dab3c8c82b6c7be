// Package safefile opens the files hermesd creates or writes (logs, the
// ledger's lock and queue, the state lock, job wrap-up notices) without
// following a symbolic link in the final component of their path, and checks
// that a file in a directory shared with other users is hermesd's own.
//
// hermesd often runs as root and writes where a unit says (a log in /tmp). A
// plain open(2) follows a link another user planted at that name and appends
// to, or truncates, a file that user could not write. Every open here adds
// O_NOFOLLOW, and O_NONBLOCK for the open itself so that a FIFO planted at the
// name cannot block the daemon (the flag is cleared before the file is
// returned); anything but a regular file is refused.
//
// Intermediate components are followed as usual: the directories a caller
// writes in are its own to check (CheckOwn helps in shared ones).
package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Sentinel errors; match with errors.Is.
var (
	// ErrSymlink: the path's final component is a symbolic link.
	ErrSymlink = errors.New("is a symbolic link")
	// ErrNotRegular: the path names a directory, FIFO, socket or device.
	ErrNotRegular = errors.New("is not a regular file")
	// ErrNotOurs: a file in a shared directory belongs to another user, or
	// has other names (hard links) that another user may have made.
	ErrNotOurs = errors.New("is not ours")
)

// OpenFile is os.OpenFile that never follows a symbolic link in the final
// component of name and opens only regular files. The descriptor is
// close-on-exec. A link at name is an error wrapping ErrSymlink that names
// the path and says what to do; a FIFO, socket, device or directory one
// wrapping ErrNotRegular.
func OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	var fd int
	var err error
	for {
		fd, err = unix.Open(name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, uint32(perm.Perm()))
		if err != unix.EINTR {
			break
		}
	}
	switch {
	case err == unix.ELOOP:
		return nil, fmt.Errorf("%s %w: hermesd does not open a file through a link; remove the link, or name the real file", name, ErrSymlink)
	case err == unix.ENXIO || err == unix.EISDIR: // O_WRONLY on a FIFO nobody reads, or a directory
		return nil, fmt.Errorf("%s %w (%w): remove it, or name a regular file", name, ErrNotRegular, err)
	case err != nil:
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "fstat", Path: name, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("%s %w: remove it, or name a regular file", name, ErrNotRegular)
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err == nil {
		_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
	}
	if err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "fcntl", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// WriteFile is os.WriteFile through OpenFile: it never writes through a link.
func WriteFile(name string, data []byte, perm fs.FileMode) error {
	f, err := OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err1 := f.Close(); err == nil {
		err = err1
	}
	return err
}

// CheckOwn checks, after the open, that f is this process's own file: owned
// by the effective uid and with no other name (a hard link another user made
// to a file of ours would let that user read what we write). Use it on files
// opened in a directory that other users can write.
func CheckOwn(f *os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return &fs.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	if euid := os.Geteuid(); int(st.Uid) != euid {
		return fmt.Errorf("%s %w: it belongs to uid %d, not to uid %d that runs hermesd, in a directory other users can write; remove it (rm %s), or move the file to a directory of your own",
			f.Name(), ErrNotOurs, st.Uid, euid, Quote(f.Name()))
	}
	if st.Nlink > 1 {
		return fmt.Errorf("%s %w: it has %d hard links in a directory other users can write; remove it (rm %s), or move the file to a directory of your own",
			f.Name(), ErrNotOurs, st.Nlink, Quote(f.Name()))
	}
	return nil
}

// Quote makes a path safe to paste into a POSIX shell, for the fixes error
// messages suggest.
func Quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
