package supervisor

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestOwnerGroupOutsideNamespace: an owner whose process group (and
// session) was made outside its PID namespace, where both read as 0, as
// for any program started by `unshare --pid --fork` or by a container
// runtime that does not make it a session leader. Its spawns must work in
// both modes: in cgroup mode a spawn is registered before its leader
// exists, with group 0 ("none yet"), which the supervisor once took for
// the owner's own group (0 too) and refused as unsafe.
func TestOwnerGroupOutsideNamespace(t *testing.T) {
	if testing.Short() {
		t.Skip("starts owners in PID namespaces")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skipf("no unshare (util-linux) on PATH: %v", err)
	}
	if out, err := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "true").CombinedOutput(); err != nil {
		t.Skipf("PID namespaces are not allowed here (unshare --pid --fork --mount-proc true: %v: %s)", err, strings.TrimSpace(string(out)))
	}
	for _, mode := range modes(t) {
		t.Run(string(mode), func(t *testing.T) {
			cmd := exec.Command("unshare", "--pid", "--fork", "--mount-proc", os.Args[0])
			cmd.Env = append(os.Environ(), envHelper+"=owner", envKind+"=simple", envChildRow+"=ns-"+strconv.Itoa(os.Getpid()),
				envMode+"="+string(mode), envState+"="+t.TempDir(), envN+"=2", envLines+"=1",
				envGraceMS+"="+strconv.Itoa(int(testGrace.Milliseconds())))
			cmd.Stdin = strings.NewReader("status\n")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("owner in a PID namespace: %v; stdout:\n%s\nstderr:\n%s", err, out, stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) != 2 || lines[0] != "ready" {
				t.Fatalf("owner said %q, want ready then a status line", lines)
			}
			// "PID GROUPS ...": both spawns registered.
			if f := strings.Fields(lines[1]); len(f) < 2 || f[1] != "2" {
				t.Errorf("status %q: want 2 groups registered", lines[1])
			}
		})
	}
}
