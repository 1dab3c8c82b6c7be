package reconciler

import (
	"os"
	"path/filepath"
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
	testkit.EventuallyOK(t, 15*time.Second, func() error {
		b, err := os.ReadFile(out)
		if err != nil {
			return err
		}
		if got, want := strings.TrimSpace(string(b)), "1|two words|from-unit"; got != want {
			t.Fatalf("the unit saw %q, want %q", got, want)
		}
		return nil
	})
	want := "unit db: env_file " + missing + ": no such file; create it, or write the path as \"-" + missing + "\" if it is optional"
	l.waitFor("db failed on its env file", func(m map[string]control.Unit) bool {
		return m["db"].State == "failed" && strings.HasPrefix(m["db"].Error, want)
	})
}
