package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

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
		{"python", "python3", []string{"-m", "unittest", "-v", "test_hermes_owned"}, "clients/python"},
		{"node", "node", []string{"--test", "hermes-owned.test.js"}, "clients/node"},
	} {
		t.Run(s.name, func(t *testing.T) {
			bin, err := exec.LookPath(s.interpreter)
			if err != nil {
				t.Skipf("%s is not in PATH: the %s client's tests need it", s.interpreter, s.name)
			}
			cmd := exec.Command(bin, s.args...)
			cmd.Dir = filepath.Join(root, s.dir)
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s %s: %v\n%s", s.interpreter, strings.Join(s.args, " "), err, out)
			}
			t.Logf("%s", out)
		})
	}
}
