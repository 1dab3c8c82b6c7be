package logfile

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// growPipe makes the pipe of w hold n bytes (F_SETPIPE_SZ).
func growPipe(t *testing.T, w *os.File, n int) {
	t.Helper()
	if _, err := unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, n); err != nil {
		t.Fatalf("F_SETPIPE_SZ %d: %v", n, err)
	}
}
