package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/hermes-units/hermes/internal/safefile"
)

// ErrUnsafeState reports a state directory, or an entry in it, that
// another user could use against hermesd: owned by another user, writable
// by others, or an entry replaced by a symbolic link.
var ErrUnsafeState = errors.New("state directory not safe")

// checkState refuses, as sshd's StrictModes does for ~/.ssh, a state
// directory that is not hermesd's own: it and every entry directly in it
// (logs, notify, the ledger's files, proxy.token, holds.json, the
// sockets) must belong to the user hermesd runs as, or to root, and be
// writable by no one else; no entry may be a symbolic link. hermesd, often
// root, writes logs, tokens and the ledger there: an entry another user
// controls would let that user read them, or swap them for links that
// hermesd writes through. A socket's own mode is not judged (the
// directory's is what keeps others out). Each refusal says the fix.
// serve calls it once the directory exists, before anything is opened
// in it.
func checkState(state string) error {
	fi, err := os.Stat(state)
	if err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory; pass another --state", ErrUnsafeState, state)
	}
	if err := strict(state, state, fi); err != nil {
		return err
	}
	entries, err := os.ReadDir(state)
	if err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	for _, e := range entries {
		path := filepath.Join(state, e.Name())
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the listing
		}
		if err != nil {
			return fmt.Errorf("state directory: %w", err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%w: %s is a symbolic link: hermesd never writes its state through a link; remove it (rm %s)",
				ErrUnsafeState, path, safefile.Quote(path))
		}
		if err := strict(state, path, fi); err != nil {
			return err
		}
	}
	return nil
}

// strict holds one path of the state directory to checkState's rules.
func strict(state, path string, fi fs.FileInfo) error {
	euid := os.Geteuid()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != euid && st.Uid != 0 {
		return fmt.Errorf("%w: %s belongs to uid %d, not to uid %d that runs hermesd: that user could read what hermesd keeps there, or swap it for a link; fix it with: chown -R %d %s (or pass a --state of your own)",
			ErrUnsafeState, path, st.Uid, euid, euid, safefile.Quote(state))
	}
	if fi.Mode().Type() == fs.ModeSocket {
		return nil
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%w: %s has mode %04o: other users can write it, and could swap what hermesd keeps there for a link; fix it with: chmod go-w %s",
			ErrUnsafeState, path, perm, safefile.Quote(path))
	}
	return nil
}
