package testkit

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/hermes-units/hermes/proc"
)

// StartOutput starts cmd with a pipe on its stdout and returns the pipe's
// read end, buffered, for the handshake lines cmd writes there. It fails t
// at once when cmd does not start. The caller stops and waits for cmd
// (t.Cleanup): how depends on what cmd leaves behind.
func StartOutput(t testing.TB, cmd *exec.Cmd) *bufio.Reader {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return bufio.NewReader(out)
}

// StartIdentified starts cmd and returns the identity of its process,
// read at once; the test's end kills and reaps it (os.Process.Kill is
// safe there even once the test has reaped it itself: no stray signal to
// a recycled pid). It fails t at once when cmd does not start or its
// identity cannot be read.
func StartIdentified(t testing.TB, cmd *exec.Cmd) proc.Identity {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return Identity(t, cmd.Process.Pid)
}

// Identity is the identity of the live process pid, read now; t fails at
// once when it cannot be read.
func Identity(t testing.TB, pid int) proc.Identity {
	t.Helper()
	id, err := proc.Read(pid)
	if err != nil {
		t.Fatalf("pid %d: %v", pid, err)
	}
	return id
}

// StartPiped is StartOutput with a pipe on cmd's stdin as well; it returns
// that pipe's write end too, to talk to cmd or to close for its EOF.
func StartPiped(t testing.TB, cmd *exec.Cmd) (io.WriteCloser, *bufio.Reader) {
	t.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	return in, StartOutput(t, cmd)
}

// Self returns a command that runs this test binary again, running no test,
// with env added to the test's environment: a TestMain that finds its
// helper variable in env plays that helper instead (as os/exec's tests
// do). Under -race the helper does not sleep a second at exit.
func Self(env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	cmd.Env = append(append(os.Environ(), "GORACE="+gorace), env...)
	return cmd
}
