package testkit

import (
	"bufio"
	"io"
	"os/exec"
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
