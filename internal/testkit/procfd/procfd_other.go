//go:build !linux

package procfd

import "github.com/hermes-units/hermes/proc"

// List is unsupported here: the descriptors are read from /proc/PID/fd
// and fdinfo, which only Linux has.
func List(int) ([]FD, error) {
	return nil, &proc.UnsupportedError{What: "a process's descriptors", Why: "procfd reads /proc/PID/fd and fdinfo, which only Linux has"}
}
