package control

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// peerCredentials reads the peer's uid with LOCAL_PEERCRED. Its pid is 0:
// FreeBSD puts it in a union of struct xucred that x/sys/unix does not
// name.
func peerCredentials(fd int) (peer, error) {
	cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return peer{}, fmt.Errorf("LOCAL_PEERCRED: %w", err)
	}
	return peer{UID: int(cred.Uid)}, nil
}
