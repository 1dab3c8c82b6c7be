package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// holdStateName takes the state directory's name for as long as hermesd
// runs: an abstract Unix socket (Linux; no file, nothing to delete) named
// for the directory's canonical path. The flock on hermesd.lock is on a
// file: once the directory is removed (rm -rf) a second hermesd makes a new
// one, and a new lock file it can lock, while the first still runs its
// units. The name outlives the files, so the second is refused as long as
// the first runs. The abstract namespace is per network namespace: two
// hermesds in different ones are kept apart by the flock alone. The socket
// is close-on-exec and never accepts; a hermesd refused connects to it only
// to name the holder (SO_PEERCRED).
func holdStateName(state string) (io.Closer, error) {
	name, err := stateName(state)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", name)
	if err == nil {
		return ln, nil
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("state directory %s: take its name: %w", state, err)
	}
	holder := "unknown"
	if pid := namePID(name); pid > 0 {
		holder = fmt.Sprint(pid)
	}
	return nil, fmt.Errorf("%w: %s is held by pid %s, which still runs its units though its hermesd.lock was removed (the directory deleted and made again?); stop that hermesd or pass another --state",
		ErrLocked, state, holder)
}

// stateName is the abstract socket name of the state directory at state:
// a digest of its canonical path (links resolved), so that every way of
// naming the directory, and the directory made again at the same place,
// get the same name.
func stateName(state string) (string, error) {
	abs, err := filepath.Abs(state)
	if err != nil {
		return "", fmt.Errorf("state directory %s: %w", state, err)
	}
	if canon, err := filepath.EvalSymlinks(abs); err == nil {
		abs = canon
	}
	sum := sha256.Sum256([]byte(abs))
	return "@hermesd-state-" + hex.EncodeToString(sum[:16]), nil
}

// namePID is the pid of the process that holds the abstract socket name,
// or 0 when it cannot be told.
func namePID(name string) int {
	c, err := net.Dial("unix", name)
	if err != nil {
		return 0
	}
	defer c.Close()
	rc, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		return 0
	}
	pid := 0
	rc.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid
}
