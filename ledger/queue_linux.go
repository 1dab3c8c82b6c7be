package ledger

import (
	"os"

	"golang.org/x/sys/unix"
)

// The line's locks on Linux: open file description locks on one byte each.

// ofdLocks: the line is made (see queue.go).
const ofdLocks = true

// lockTicket locks byte n of f for its open file description, without
// waiting (F_OFD_SETLK).
func lockTicket(f *os.File, n int64) error {
	return lockByte(f, n, unix.F_OFD_SETLK, unix.F_WRLCK)
}

// waitTicket locks byte n of f, blocking until no other open file
// description holds it (F_OFD_SETLKW). It may fail with EINTR.
func waitTicket(f *os.File, n int64) error {
	return lockByte(f, n, unix.F_OFD_SETLKW, unix.F_WRLCK)
}

// ticketTaken reports whether another open file description than f's
// holds byte n (F_OFD_GETLK); false when the kernel does not say.
func ticketTaken(f *os.File, n int64) bool {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: n, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		return false
	}
	return lk.Type != unix.F_UNLCK
}

func lockByte(f *os.File, n int64, cmd int, typ int16) error {
	lk := unix.Flock_t{Type: typ, Whence: 0, Start: n, Len: 1}
	return unix.FcntlFlock(f.Fd(), cmd, &lk)
}
