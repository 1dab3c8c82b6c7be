package reconciler

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
)

// TestEnvFileEndToEnd: a unit's env files are read at its start, in
// order, into its environment, its env: above them; an optional file that
// is missing is skipped; a mandatory one that is missing fails the start
// with an error naming the file.
func TestEnvFileEndToEnd(t *testing.T) {
	base := t.TempDir()
	out := filepath.Join(base, "out")
	envA := filepath.Join(base, "a.env")
	if err := os.WriteFile(envA, []byte("# settings\nA=1\nexport B=\"two words\"\nC=from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(base, "missing.env")
	l := startLive(t, map[string]string{
		"web.yaml": "shell: 'echo \"$A|$B|$C\" > " + out + "; exec sleep 100'\nenv_file: [" + envA + ", -" + missing + "]\nenv: {C: from-unit}\n",
		"db.yaml":  "shell: 'exec sleep 100'\nenv_file: " + missing + "\nrestart: \"no\"\n",
	})
	l.waitFor("web running", running("web"))
	waitLine(t, out, "1|two words|from-unit")
	want := "unit db: env_file " + missing + ": no such file; create it, or write the path as \"-" + missing + "\" if it is optional"
	l.waitFor("db failed on its env file", func(m map[string]control.Unit) bool {
		return m["db"].State == "failed" && strings.HasPrefix(m["db"].Error, want)
	})
}

// TestUserEnv: a unit with user: gets that user's USER, LOGNAME and HOME
// (not hermesd's), as systemd's User= gives them; its env: is above them.
func TestUserEnv(t *testing.T) {
	nobody := testkit.Nobody(t, "only root may start a unit as another user")
	shared, err := os.MkdirTemp("", "hermes-userenv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shared) })
	if err := os.Chmod(shared, 0o777); err != nil { // nobody writes its answer there
		t.Fatal(err)
	}
	out := filepath.Join(shared, "out")
	l := startLive(t, map[string]string{
		"web.yaml": "user: nobody\nworkdir: /\nshell: 'echo \"$USER|$LOGNAME|$HOME\" > " + out + "; exec sleep 100'\nenv: {LOGNAME: mine}\n",
	})
	l.waitFor("web running", running("web"))
	waitLine(t, out, "nobody|mine|"+nobody.HomeDir)
}

// waitLine waits for the file out, where a unit writes what it saw, to
// hold the line want (the shell creates the file before it writes the
// line: an empty file is read again).
func waitLine(t *testing.T, out, want string) {
	t.Helper()
	if err := testkit.WaitFile(out, regexp.MustCompile(`^`+regexp.QuoteMeta(want)+`\n$`), 15*time.Second); err != nil {
		t.Fatalf("what the unit saw: %v", err)
	}
}
