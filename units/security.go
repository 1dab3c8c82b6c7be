package units

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// checkOwner refuses a unit file or units directory that another user
// could change: writable by group or others, or owned by a user other
// than the running one. Root-owned files are accepted for everyone (root
// can run anything already). A unit is code execution: whoever can write
// it runs commands as us. what is "file" or "directory". fi describes the
// path after following symlinks.
//
// On a read-only mount (a ConfigMap or Secret volume) the mode bits say
// nothing of who can write: nobody can, and the writable check is not
// made; the owner check still is.
func checkOwner(path string, fi fs.FileInfo, what string) *Error {
	perm := fi.Mode().Perm()
	if perm&0o022 != 0 && !readOnlyMount(path) {
		fix := "chmod go-w " + shellWord(path)
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
			what, userName(st.Uid), userName(uid), shellWord(loginOf(uid)), shellWord(path))}
	}
	return nil
}

// loginOf is what chown takes for uid: the login name, or the number when
// the user database has none.
func loginOf(uid uint32) string {
	id := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(id); err == nil && u.Username != "" {
		return u.Username
	}
	return id
}

// shellQuote makes a path one word for a POSIX shell: in single quotes,
// a single quote inside closed, escaped and reopened, so that a command in
// an error message can be pasted as is, whatever the path holds: spaces,
// $, ;, a newline.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellWord is s as one shell word for a command in an error message:
// s itself when it holds only characters no shell treats specially (a
// login name, a plain path), else quoted, so that the command can be
// pasted as is.
func shellWord(s string) string {
	if s != "" && s[0] != '-' && s[0] != '~' && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-+:@%,") == "" {
		return s
	}
	return shellQuote(s)
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
		if lfi, lerr := os.Lstat(path); lerr == nil && lfi.Mode()&fs.ModeSymlink != 0 {
			return symlinkError(path, err)
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

// symlinkError words a symlink at path that os.Stat could not follow:
// a loop (ELOOP: links that lead back to themselves, or a chain over the
// kernel's limit of 40), or a target that does not exist.
func symlinkError(path string, err error) *Error {
	target, _ := os.Readlink(path)
	if errors.Is(err, syscall.ELOOP) {
		return &Error{File: path, Err: ErrFile, Msg: fmt.Sprintf("symlink loop: the link to %s leads back to itself (or through more than 40 links); fix or remove the link", target)}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return &Error{File: path, Err: ErrFile, Msg: fmt.Sprintf("dangling symlink to %s: its target does not exist; fix or remove the link", target)}
	}
	return &Error{File: path, Err: ErrFile, Msg: fmt.Sprintf("symlink to %s cannot be followed: %v", target, unwrapPath(err))}
}

func unwrapPath(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}
