package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/supervisor"
)

// TestRunRun calls run's run function without cobra: CMD runs as an owned
// child on the streams given, and the exit status is CMD's, the shell's
// for a program that cannot be run, or a usage error for flags that do
// not go together (nothing run then).
func TestRunRun(t *testing.T) {
	for _, tc := range []struct {
		name     string
		argv     []string
		set      func(*runOptions)
		out      string // a regexp of CMD's output
		err      string // a regexp of the error; "": none
		wantCode int
	}{
		{name: "CMD's status", argv: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, out: `^out\n$`, wantCode: 3},
		{name: "CMD succeeds", argv: []string{"sh", "-c", "echo out"}, out: `^out\n$`},
		{name: "no such program", argv: []string{"hermes-no-such-program"}, out: `^$`, err: `^run: .*hermes-no-such-program`, wantCode: exitcode.HermesctlNotFound},
		{name: "not executable", argv: []string{"/dev/null"}, out: `^$`, err: `^run: /dev/null: permission denied`, wantCode: exitcode.HermesctlNotExecutable},
		{name: "--wrapup-signal without --run-budget", argv: []string{"true"}, set: func(o *runOptions) { o.wrapSig = "USR1" },
			out: `^$`, err: `^run: --wrapup-signal is sent at 80% of --run-budget`, wantCode: exitcode.Usage},
		{name: "unknown mode", argv: []string{"true"}, set: func(o *runOptions) { o.mode = "box" },
			out: `^$`, err: `^unknown supervisor mode "box"`, wantCode: exitcode.Failure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, _, _ := testClient(t, "", false)
			dir := t.TempDir()
			stdin, err := os.Open(os.DevNull)
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			stdout, stderr := createFile(t, filepath.Join(dir, "out")), createFile(t, filepath.Join(dir, "err"))
			opts := &runOptions{clientOptions: o, argv: tc.argv, mode: string(supervisor.ModePGroup), grace: supervisor.DefaultGrace,
				stdin: stdin, stdout: stdout, stderr: stderr}
			if tc.set != nil {
				tc.set(opts)
			}
			err = runRun(t.Context(), opts)
			out, _ := os.ReadFile(stdout.Name())
			checkRun(t, err, tc.wantCode, tc.err, out, tc.out)
		})
	}
}

// createFile creates the file at path, closed at the test's end.
func createFile(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
