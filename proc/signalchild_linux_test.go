//go:build linux

package proc

import (
	"errors"
	"syscall"
	"testing"
)

// TestSignalChild: a child not reaped gets the signal; once done is closed
// SignalChild returns ErrReaped and sends nothing.
func TestSignalChild(t *testing.T) {
	done := make(chan struct{})
	c := start(t, nil, nil)
	if err := SignalChild(c.cmd.Process.Pid, done, syscall.SIGTERM); err != nil {
		t.Fatalf("SignalChild of a live child = %v, want nil", err)
	}
	err := c.cmd.Wait()
	if ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("child ended with %v, want killed by SIGTERM", err)
	}

	c = start(t, nil, nil)
	close(done)
	if err := SignalChild(c.cmd.Process.Pid, done, syscall.SIGTERM); !errors.Is(err, ErrReaped) {
		t.Fatalf("SignalChild with done closed = %v, want ErrReaped", err)
	}
	c.stdin.Close()
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("child signalled after done was closed: %v", err)
	}
}
