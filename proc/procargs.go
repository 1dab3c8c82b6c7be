package proc

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// What darwin's process table gives, read the same way on every platform
// so that its parsing is tested where the tests run (on Linux too).

// errProcArgs reports a kern.procargs2 buffer that is not the layout below.
var errProcArgs = errors.New("malformed kern.procargs2 buffer")

// parseProcArgs splits the buffer sysctl kern.procargs2 returns for a
// process: argc as a native-endian int32, the executable's path and NUL
// padding, then argc NUL-terminated arguments, then the environment's
// NUL-terminated KEY=VALUE strings up to an empty string (what follows is
// the kernel's own "apple" strings, not the environment). A buffer cut
// short ends the environment where it ends; one without all its arguments
// is an error.
func parseProcArgs(b []byte) (argv, env []string, err error) {
	if len(b) < 4 {
		return nil, nil, errProcArgs
	}
	argc := int(int32(binary.NativeEndian.Uint32(b)))
	b = b[4:]
	if argc < 0 {
		return nil, nil, errProcArgs
	}
	// The executable's path, then the NULs that align argv[0].
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return nil, nil, errProcArgs
	}
	b = b[i:]
	for len(b) > 0 && b[0] == 0 {
		b = b[1:]
	}
	if argc > len(b) { // each argument ends with a NUL: a count the buffer cannot hold is a lie, not an allocation to make
		return nil, nil, errProcArgs
	}
	argv = make([]string, 0, argc)
	for range argc {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return nil, nil, errProcArgs
		}
		argv = append(argv, string(b[:i]))
		b = b[i+1:]
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, 0)
		if i <= 0 { // an empty string ends the environment; no NUL, a cut one
			break
		}
		env = append(env, string(b[:i]))
		b = b[i+1:]
	}
	return argv, env, nil
}

// darwin's p_stat values (sys/proc.h).
const (
	darwinSIDL   = 1 // being created by fork
	darwinSRUN   = 2
	darwinSSLEEP = 3
	darwinSSTOP  = 4
	darwinSZOMB  = 5
)

// stateLetter is the Linux state letter of a darwin p_stat, which Stat
// speaks on every platform: '?' for a value darwin does not define.
func stateLetter(pstat int8) byte {
	switch pstat {
	case darwinSIDL, darwinSRUN:
		return 'R'
	case darwinSSLEEP:
		return 'S'
	case darwinSSTOP:
		return 'T'
	case darwinSZOMB:
		return 'Z'
	}
	return '?'
}

// micros is a timeval (seconds and microseconds since the epoch) in
// microseconds, the unit of Identity.StartTime where the kernel's start
// time is a timeval (darwin). A time before the epoch is 0.
func micros(sec int64, usec int64) uint64 {
	if sec < 0 || usec < 0 {
		return 0
	}
	return uint64(sec)*1e6 + uint64(usec)
}
