package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-units/hermes/internal/launchd"
)

var updateExamples = flag.Bool("update", false, "rewrite examples/launchd with what export launchd writes now (make examples)")

// launchdExample is the committed example agent, and launchdExampleArgs
// the command line that writes it (with --dir): the default paths of a
// Mac user named USER, hermesd in /usr/local/bin, and Homebrew's PATH.
var (
	launchdExample     = filepath.Join("..", "..", "examples", "launchd", launchd.FileName(launchd.DefaultLabel))
	launchdExampleArgs = []string{
		"--units", "/Users/USER/.config/hermes/units",
		"--state", "/Users/USER/.local/state/hermes",
		"export", "launchd",
		"--hermesd", "/usr/local/bin/hermesd",
		"--log-dir", "/Users/USER/Library/Logs/hermes",
		"--env", "PATH=/opt/homebrew/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
	}
)

// TestLaunchdExampleIsGenerated runs export launchd with
// launchdExampleArgs and fails when its file and the committed example
// differ: the example is what the command writes today. With -update
// (make examples) it rewrites the example instead.
func TestLaunchdExampleIsGenerated(t *testing.T) {
	// No hermes.yaml, socket or HERMES_* variable of this machine may reach
	// the command: the example names only the paths given above.
	home := t.TempDir()
	for k, v := range map[string]string{
		"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"), "XDG_STATE_HOME": filepath.Join(home, ".state"),
		"XDG_RUNTIME_DIR": filepath.Join(home, "run"), "HERMES_CONFIG": "", "HERMES_UNITS": "", "HERMES_STATE": "", "HERMES_SOCKET": "",
	} {
		t.Setenv(k, v)
		if v == "" {
			os.Unsetenv(k) // t.Setenv restores it at the end
		}
	}
	dir := t.TempDir()
	root := newRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append(launchdExampleArgs, "--dir", dir))
	if err := root.Execute(); err != nil {
		t.Fatalf("hermesctl %q: %v\n%s", launchdExampleArgs, err, errOut.Bytes())
	}
	got, err := os.ReadFile(filepath.Join(dir, launchd.FileName(launchd.DefaultLabel)))
	if err != nil {
		t.Fatal(err)
	}
	if *updateExamples {
		if err := os.WriteFile(launchdExample, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(launchdExample)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not what export launchd writes now; run make examples and commit it. The command writes:\n%s", launchdExample, got)
	}
}
