//go:build !linux

package proc

// The sockets' tables where /proc/net and /proc/PID/fd are not: every
// call says so.

func unsupportedSockets() error {
	return &UnsupportedError{What: "the socket tables (listeners and their holders)", Why: "hermes reads them from /proc/net and /proc/PID/fd, which only Linux has"}
}

// Listeners is unsupported here.
func Listeners() ([]Listener, error) { return nil, unsupportedSockets() }

// SocketInodes is unsupported here.
func SocketInodes(int) ([]uint64, error) { return nil, unsupportedSockets() }

// SocketHolder finds no holder here: 0, as for a holder this process
// cannot see.
func SocketHolder(...uint64) int { return 0 }
