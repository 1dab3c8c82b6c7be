package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// TestVersionFlag: hermesd --version prints its build and exits 0 before
// it opens anything (no state directory is created).
func TestVersionFlag(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	cmd := exec.Command(os.Args[0], "--version", "--state", state, "--socket", filepath.Join(dir, "s.sock"))
	cmd.Env = append(os.Environ(), roleEnv+"=hermesd")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hermesd --version: %v (output %q)", err, out)
	}
	if !regexp.MustCompile(`^hermesd (\(devel\)|v[0-9]\S*|unknown)( \(.*\))?\n$`).Match(out) {
		t.Errorf("hermesd --version printed %q", out)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("hermesd --version touched the state directory: %v", err)
	}
}

// TestVersionServed: a running hermesd reports its build on the control
// socket, as --version prints it.
func TestVersionServed(t *testing.T) {
	d, _ := startEmpty(t)
	v, err := d.client().Version(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if want := buildVersion(); v != want {
		t.Errorf("served version %+v, want %+v", v, want)
	}
	if v.Version == "" {
		t.Error("served version is empty")
	}
}
