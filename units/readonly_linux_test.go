package units

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const envROHelper = "HERMES_UNITS_RO_HELPER"

// TestMain's helper: in a mount namespace where the directory named by
// envROHelper is a read-only bind mount, load it and say how it went.
func init() {
	dir := os.Getenv(envROHelper)
	if dir == "" {
		return
	}
	d, err := LoadDir(dir)
	switch {
	case err != nil:
		os.Stdout.WriteString("error: " + err.Error() + "\n")
	case d.Units["web"] == nil:
		os.Stdout.WriteString("no web: " + d.Errors().Error() + "\n")
	default:
		os.Stdout.WriteString("loaded web\n")
	}
	os.Exit(0)
}

// A ConfigMap volume's directory reads mode 0777 on a read-only mount:
// nobody can write there, and the units directory is accepted. The same
// directory on a writable mount is refused, as before.
func TestReadOnlyMountDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "units")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil { // past the umask
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte("command: [sleep, \"1\"]\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "writable by") {
		t.Fatalf("a 0777 units directory on a writable mount: %v, want it refused as writable", err)
	}
	script := `mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && exec "$2" -test.run='^$'`
	probe := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", "mount --bind / /mnt 2>/dev/null; exit 0")
	if out, err := probe.CombinedOutput(); err != nil {
		t.Skipf("no mount namespace here (unshare --mount: %v: %s): the read-only case needs one", err, strings.TrimSpace(string(out)))
	}
	c := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", dir, os.Args[0])
	c.Env = append(os.Environ(), envROHelper+"="+dir)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("helper in a mount namespace: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "loaded web" {
		t.Fatalf("a 0777 units directory on a read-only mount: %q, want it loaded", got)
	}
}
