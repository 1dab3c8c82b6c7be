package notify

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// The sender's credentials on Linux: SO_PASSCRED on the socket, an
// SCM_CREDENTIALS message with every datagram.

const (
	defaultMode     = ModeShared
	haveCredentials = true
)

// oobSize holds the credentials and the most descriptors a datagram can
// pass (SCM_MAX_FD, 253), which are closed.
var oobSize = unix.CmsgSpace(unix.SizeofUcred) + unix.CmsgSpace(4*253)

// passCredentials asks the kernel to attach the sender's credentials to
// every datagram received on fd.
func passCredentials(fd int) error {
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
		return fmt.Errorf("set SO_PASSCRED: %w", err)
	}
	return nil
}

// credentials extracts SCM_CREDENTIALS from control messages into a
// Message's PID, UID and GID, and closes any descriptors passed with
// SCM_RIGHTS, which the daemon never keeps. It reports false when the
// datagram carried no credentials.
func credentials(oob []byte) (Message, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return Message{}, false
	}
	var cred *unix.Ucred
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_SOCKET {
			continue
		}
		switch m.Header.Type {
		case unix.SCM_CREDENTIALS:
			if c, err := unix.ParseUnixCredentials(&m); err == nil {
				cred = c
			}
		case unix.SCM_RIGHTS:
			if fds, err := unix.ParseUnixRights(&m); err == nil {
				for _, fd := range fds {
					unix.Close(fd)
				}
			}
		}
	}
	if cred == nil {
		return Message{}, false
	}
	return Message{PID: int(cred.Pid), UID: int(cred.Uid), GID: int(cred.Gid)}, true
}
