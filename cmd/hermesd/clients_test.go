package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// clientsBound is how long a client library's tests may run: about a
// minute on a quiet machine, several on a loaded one.
const clientsBound = 10 * time.Minute

// TestClientLibraries runs the client libraries' own tests (clients/python
// with unittest, clients/node with node --test) against a real hermesd and
// real processes: the four verbs, the refusals, and the seeds' families for
// a Python and a Node owner killed with kill -9, in pgroup mode: the same
// agents run in every mode as rows of the survivors matrix
// (ownerFamilyMatrix), which need not be run twice. The MCP server row
// runs when .ci/run installed @modelcontextprotocol/server-filesystem in
// .ci/npm.
func TestClientLibraries(t *testing.T) {
	needsProcesses(t, "hermesd and agents in Python and Node")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	d, dir := startEmpty(t)
	hermesctl := buildHermesctl(t)
	runState := filepath.Join(dir, "run-state")
	modes := "pgroup"
	env := append(os.Environ(), "HERMES_SOCKET="+d.socket, "HERMESCTL="+hermesctl, "HERMES_STATE="+runState,
		"HERMES_TEST_MODES="+modes, "TMPDIR="+t.TempDir())
	if mcp := mcpServer(root); mcp != "" {
		env = append(env, "HERMES_TEST_MCP_SERVER="+mcp)
	} else {
		t.Logf("the MCP server row is left out: @modelcontextprotocol/server-filesystem is not in .ci/npm (.ci/run installs it with npm)")
	}
	for _, s := range []struct {
		name, interpreter string
		args              []string
		dir               string
	}{
		// -X faulthandler: the SIGABRT of a run past its bound prints
		// every thread's traceback before the interpreter dies.
		{"python", "python3", []string{"-X", "faulthandler", "-m", "unittest", "-v", "test_hermes_owned"}, "clients/python"},
		{"node", "node", []string{"--test", "--test-timeout=300000", "hermes-owned.test.js"}, "clients/node"},
	} {
		t.Run(s.name, func(t *testing.T) {
			bin, err := exec.LookPath(s.interpreter)
			if err != nil {
				t.Skipf("%s is not in PATH: the %s client's tests need it", s.interpreter, s.name)
			}
			// A run that hangs fails here with what it printed (and, for
			// Python, where each thread was), instead of stalling the
			// package until go test's own timeout.
			ctx, cancel := context.WithTimeout(t.Context(), clientsBound)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, s.args...)
			cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGABRT) }
			cmd.WaitDelay = 15 * time.Second
			cmd.Dir = filepath.Join(root, s.dir)
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("%s %s: still running after %v; its output:\n%s", s.interpreter, strings.Join(s.args, " "), clientsBound, out)
			}
			if err != nil {
				t.Fatalf("%s %s: %v\n%s", s.interpreter, strings.Join(s.args, " "), err, out)
			}
			t.Logf("%s", out)
		})
	}
}
