//go:build !linux

package notify

import (
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// No sender credentials on a datagram here (see the package doc): Listen
// fails in passCredentials, so a shared Server never receives, and the
// per-unit Sockets attribute a message by its socket alone.

const (
	defaultMode     = ModeUnit
	haveCredentials = false
)

// oobSize holds the most descriptors a datagram can pass, which are
// closed (closeRights), never kept.
var oobSize = unix.CmsgSpace(4 * 253)

func passCredentials(int) error {
	return fmt.Errorf("the sender's pid on a datagram (SCM_CREDENTIALS) is Linux's; on %s a shared notify socket cannot tell which unit sent a message (use per-unit sockets): %w", runtime.GOOS, errors.ErrUnsupported)
}

// credentials closes the descriptors passed along and reports false: no
// datagram carries its sender's credentials here.
func credentials(oob []byte) (Message, bool) {
	closeRights(oob)
	return Message{}, false
}

// closeRights closes the descriptors an SCM_RIGHTS message passed in oob.
func closeRights(oob []byte) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return
	}
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SCM_RIGHTS {
			continue
		}
		if fds, err := unix.ParseUnixRights(&m); err == nil {
			for _, fd := range fds {
				unix.Close(fd)
			}
		}
	}
}
