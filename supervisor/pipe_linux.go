package supervisor

import (
	"os"

	"golang.org/x/sys/unix"
)

// pipeMax is the size a pipe may be grown to without privilege, on a
// system with fs.pipe-max-size at its default.
const pipeMax = 1 << 20

// growPipe asks for a pipe that holds n bytes, up to pipeMax. A refusal
// leaves the pipe as it was.
func growPipe(f *os.File, n int) {
	if n <= 1<<16 { // a pipe's default size
		return
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		unix.FcntlInt(fd, unix.F_SETPIPE_SZ, min(n, pipeMax))
	})
}
