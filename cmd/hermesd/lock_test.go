package main

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hermes-units/hermes/internal/exitcode"
)

// TestStateDirLocked: a second hermesd on the same state directory is
// refused with exit code 3 and names the holder's pid.
func TestStateDirLocked(t *testing.T) {
	first, dir := startEmpty(t)
	code, stderr := runHermesd(t, "--units", filepath.Join(dir, "units"), "--state", filepath.Join(dir, "state"),
		"--socket", filepath.Join(dir, "other.sock"), "--config", filepath.Join(dir, "none.yaml"))
	if code != exitcode.HermesdLocked {
		t.Fatalf("second hermesd: exit %d, want exit code %d; stderr:\n%s", code, exitcode.HermesdLocked, stderr)
	}
	if want := "held by pid " + strconv.Itoa(first.cmd.Process.Pid); !strings.Contains(stderr, want) {
		t.Errorf("stderr %q does not name the holder (%q)", stderr, want)
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"unknown flag", []string{"--no-such-flag"}},
		{"bad role", []string{"--role", "boss"}},
		{"stray argument", []string{"extra"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseFlags(tt.args)
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != exitcode.Usage {
				t.Errorf("parseFlags(%q) = %v, want an exit code %d error", tt.args, err, exitcode.Usage)
			}
		})
	}
}

// TestStateLockLinkRefused: a symbolic link at <state>/hermesd.lock is
// refused and its target neither created nor truncated.
func TestStateLockLinkRefused(t *testing.T) {
	state := t.TempDir()
	target := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(target, []byte("keep me\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(state, "hermesd.lock")); err != nil {
		t.Fatal(err)
	}
	f, err := lockState(state)
	if err == nil {
		f.Close()
		t.Fatal("lockState through a link succeeded")
	}
	if b, _ := os.ReadFile(target); string(b) != "keep me\n" {
		t.Errorf("the link's target was written: %q", b)
	}
}
