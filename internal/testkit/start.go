package testkit

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
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
