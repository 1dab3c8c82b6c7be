package supervisor

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// pipeSize is how many bytes the pipe f holds.
func pipeSize(t *testing.T, f *os.File) (int, bool) {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	rc.Control(func(fd uintptr) { n, err = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0) })
	if err != nil {
		t.Fatal(err)
	}
	return n, true
}
