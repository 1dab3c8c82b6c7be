package control

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// peer is what the kernel says about the process at the other end of a
// connection, captured when it called connect(2).
type peer struct {
	PID, UID int
}

// peerOf reads the peer's credentials with SO_PEERCRED. A connection that is
// not a Unix socket has none, and is refused by the caller.
func peerOf(c net.Conn) (peer, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return peer{}, fmt.Errorf("%T carries no peer credentials", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return peer{}, err
	}
	var cred *unix.Ucred
	var serr error
	if err := rc.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return peer{}, err
	}
	if serr != nil {
		return peer{}, fmt.Errorf("SO_PEERCRED: %w", serr)
	}
	if cred == nil {
		return peer{}, errors.New("SO_PEERCRED: no credentials")
	}
	return peer{PID: int(cred.Pid), UID: int(cred.Uid)}, nil
}

// admitted says whether a peer with uid may steer a daemon that runs as self:
// the same user, or root.
func admitted(uid, self int) bool { return uid == self || uid == 0 }
