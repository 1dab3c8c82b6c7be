package units

import (
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// checkOwner refuses a unit file or units directory that another user
// could change: writable by group or others, or owned by a user other
// than the running one. Root-owned files are accepted for everyone (root
// can run anything already). A unit is code execution: whoever can write
// it runs commands as us. what is "file" or "directory". fi describes the
// path after following symlinks.
func checkOwner(path string, fi fs.FileInfo, what string) *Error {
	perm := fi.Mode().Perm()
	if perm&0o022 != 0 {
		fix := "chmod go-w " + path
		return &Error{File: path, Err: ErrInsecure, Msg: fmt.Sprintf(
			"%s mode %04o is writable by %s: anyone who can write a unit runs commands as you; fix with `%s` (or pass --insecure-units to load it anyway)",
			what, perm, writers(perm), fix)}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	uid := uint32(os.Geteuid())
	if st.Uid != uid && st.Uid != 0 {
		return &Error{File: path, Err: ErrInsecure, Msg: fmt.Sprintf(
			"%s is owned by %s, not by you (%s): another user could change what runs; fix with `chown %s %s` (or pass --insecure-units to load it anyway)",
			what, userName(st.Uid), userName(uid), userName(uid), path)}
	}
	return nil
}

func writers(perm fs.FileMode) string {
	switch {
	case perm&0o020 != 0 && perm&0o002 != 0:
		return "group and others"
	case perm&0o020 != 0:
		return "group"
	}
	return "others"
}

func userName(uid uint32) string {
	id := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(id); err == nil {
		return fmt.Sprintf("%s (uid %s)", u.Username, id)
	}
	return "uid " + id
}

// checkDir checks a units directory: it must exist, be a directory
// (symlinks followed) and, when secure, pass checkOwner.
func checkDir(path string, secure bool) *Error {
	fi, err := os.Stat(path)
	if err != nil {
		if _, lerr := os.Lstat(path); lerr == nil {
			target, _ := os.Readlink(path)
			return &Error{File: path, Err: ErrFile, Msg: fmt.Sprintf("dangling symlink to %s: its target does not exist; fix or remove the link", target)}
		}
		return &Error{File: path, Err: fmt.Errorf("%w: %w", ErrFile, err), Msg: fmt.Sprintf("units directory: %v", unwrapPath(err))}
	}
	if !fi.IsDir() {
		return &Error{File: path, Err: ErrFile, Msg: "is not a directory; give the units directory (or a unit file where a file is expected)"}
	}
	if secure {
		return checkOwner(path, fi, "units directory")
	}
	return nil
}

func unwrapPath(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}
