package main

import (
	"bytes"
	"io"
	"path/filepath"
	"regexp"
	"testing"
)

// testClient is the clientOptions of a command run without cobra: hermesd
// at socket ("": none, a socket nobody serves), the state directory and
// the config file the test's own (empty; no config file), and buffers for
// the output and error streams, which it returns.
func testClient(t *testing.T, socket string, json bool) (clientOptions, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	dir := t.TempDir()
	if socket == "" {
		socket = filepath.Join(dir, "none.sock")
	}
	g := &globals{}
	g.Socket, g.State, g.Config, g.Units = socket, filepath.Join(dir, "state"), filepath.Join(dir, "hermes.yaml"), filepath.Join(dir, "units")
	var out, errOut bytes.Buffer
	return clientOptions{g: g, streams: streams{out: &out, errOut: &errOut, json: json}}, &out, &errOut
}

// checkRun checks what a command's run function did: the exit status main
// gives err (report), err itself (wantErr, a regexp; "": any), and the
// command's output (wantOut, a regexp).
func checkRun(t *testing.T, err error, wantCode int, wantErr string, out []byte, wantOut string) {
	t.Helper()
	if got := report(err, io.Discard); got != wantCode {
		t.Errorf("got exit status %d (%v), want %d", got, err, wantCode)
	}
	if wantErr != "" && (err == nil || !regexp.MustCompile(wantErr).MatchString(err.Error())) {
		t.Errorf("got error %v, want one matching %s", err, wantErr)
	}
	if !regexp.MustCompile(wantOut).Match(out) {
		t.Errorf("got output %q, want %s", out, wantOut)
	}
}
