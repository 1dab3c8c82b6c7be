package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// SystemdVerify runs `systemd-analyze verify --user` over the unit files
// at paths, with a runtime directory of its own, and returns its findings,
// a line each, and the error of the run. A systemd older than 254 does not
// know the backoff settings (RestartSteps=, RestartMaxDelaySec=) and says
// so: those lines are left out. It skips t where systemd-analyze is not
// installed (the Debian package systemd has it).
func SystemdVerify(t testing.TB, paths ...string) ([]string, error) {
	t.Helper()
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (Debian package systemd): verify needs it")
	}
	rt := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(rt, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), sa, append([]string{"verify", "--user", "--man=no"}, paths...)...)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+rt, "SYSTEMD_LOG_COLOR=0")
	b, err := cmd.CombinedOutput()
	var found []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line != "" && !strings.Contains(line, "RestartSteps") && !strings.Contains(line, "RestartMaxDelaySec") {
			found = append(found, line)
		}
	}
	return found, err
}
