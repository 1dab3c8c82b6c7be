package testkit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSystemdVerify: a valid service has no findings, the backoff settings
// an older systemd does not know are none either, and a key systemd does
// not know is one, naming the key.
func TestSystemdVerify(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.service", "[Service]\nExecStart=/bin/true\nRestart=on-failure\nRestartSteps=5\nRestartMaxDelaySec=60s\n")
	if found, err := SystemdVerify(t, good); err != nil || len(found) != 0 {
		t.Errorf("a valid service: findings %q, error %v; want none", found, err)
	}
	bad := write("bad.service", "[Service]\nExecStart=/bin/true\nNoSuchKey=1\n")
	found, _ := SystemdVerify(t, bad)
	if len(found) != 1 || !strings.Contains(found[0], "NoSuchKey") {
		t.Errorf("an unknown key: findings %q, want one naming NoSuchKey", found)
	}
}
