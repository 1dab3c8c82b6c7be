package control

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// peerCredentials reads the peer's uid with LOCAL_PEERCRED (getpeereid(3)
// reads the same) and its pid with LOCAL_PEERPID.
func peerCredentials(fd int) (peer, error) {
	cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return peer{}, fmt.Errorf("LOCAL_PEERCRED: %w", err)
	}
	pid, err := unix.GetsockoptInt(fd, unix.SOL_LOCAL, unix.LOCAL_PEERPID)
	if err != nil {
		return peer{}, fmt.Errorf("LOCAL_PEERPID: %w", err)
	}
	return peer{PID: pid, UID: int(cred.Uid)}, nil
}
