package control

import (
	"fmt"
	"net"
	"syscall"
)

// peer is what the kernel says about the process at the other end of a
// connection, captured when it called connect(2).
type peer struct {
	PID, UID int // PID is 0 where the platform does not say (FreeBSD)
}

// peerOf reads the credentials of c's peer (peerCredentials, per
// platform). A connection that is not a Unix socket has none, and is
// refused by the caller.
func peerOf(c net.Conn) (peer, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return peer{}, fmt.Errorf("%T carries no peer credentials", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return peer{}, err
	}
	var p peer
	var perr error
	if err := rc.Control(func(fd uintptr) { p, perr = peerCredentials(int(fd)) }); err != nil {
		return peer{}, err
	}
	return p, perr
}

// admitted says whether a peer with uid may steer a daemon that runs as self:
// the same user, or root.
func admitted(uid, self int) bool { return uid == self || uid == 0 }
