//go:build !linux && !darwin && !freebsd

package proc

import "os"

// ExitFile is unsupported here: the caller waits another way.
func ExitFile(int) (*os.File, error) {
	return nil, &UnsupportedError{What: "exit files", Why: "hermes watches exits with pidfds on Linux and kqueue on darwin and FreeBSD"}
}

// Exited reports true: there is no exit file to wait on.
func Exited(int) bool { return true }
