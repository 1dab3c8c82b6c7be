package control

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// peerCredentials reads the peer's pid and uid with SO_PEERCRED.
func peerCredentials(fd int) (peer, error) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return peer{}, fmt.Errorf("SO_PEERCRED: %w", err)
	}
	if cred == nil {
		return peer{}, errors.New("SO_PEERCRED: no credentials")
	}
	return peer{PID: int(cred.Pid), UID: int(cred.Uid)}, nil
}
