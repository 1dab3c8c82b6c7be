package control

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-units/hermes/internal/testkit"
)

func TestListen(t *testing.T) {
	t.Run("creates a 0700 directory and a 0600 socket", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "a", "run")
		path := filepath.Join(dir, "hermesd.sock")
		ln, err := Listen(path, nil)
		if err != nil {
			t.Fatalf("Listen: %v", err)
		}
		defer ln.Close()
		testkit.Perms(t, map[string]os.FileMode{dir: 0o700, path: 0o600})
		if err := ln.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("socket still there after Close: %v", err)
		}
	})
	t.Run("removes a stale socket", func(t *testing.T) {
		dir := privateDir(t)
		path := filepath.Join(dir, "hermesd.sock")
		staleSocket(t, path)
		ln, err := Listen(path, nil)
		if err != nil {
			t.Fatalf("Listen over a stale socket: %v", err)
		}
		ln.Close()
	})

	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, path string) // prepares path (and its directory)
		want  error
		keep  bool // the thing at path must survive the refusal
	}{
		{"directory too open", func(t *testing.T, path string) {
			mkdir(t, filepath.Dir(path), 0o755)
		}, ErrUnsafe, false},
		{"directory open to the group", func(t *testing.T, path string) {
			mkdir(t, filepath.Dir(path), 0o710)
		}, ErrUnsafe, false},
		{"directory of another user", func(t *testing.T, path string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give a directory to another uid")
			}
			dir := filepath.Dir(path)
			mkdir(t, dir, 0o700)
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, ErrUnsafe, false},
		{"path is not a socket", func(t *testing.T, path string) {
			mkdir(t, filepath.Dir(path), 0o700)
			if err := os.WriteFile(path, []byte("precious"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, ErrUnsafe, true},
		{"path is a symlink to a socket", func(t *testing.T, path string) {
			dir := filepath.Dir(path)
			mkdir(t, dir, 0o700)
			staleSocket(t, filepath.Join(dir, "other.sock"))
			if err := os.Symlink("other.sock", path); err != nil {
				t.Fatal(err)
			}
		}, ErrUnsafe, true},
		{"live socket", func(t *testing.T, path string) {
			mkdir(t, filepath.Dir(path), 0o700)
			ln, err := net.Listen("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			// Nobody calls Accept: the kernel completes a connect from the
			// backlog, which is what a live daemon looks like to the probe.
			t.Cleanup(func() { ln.Close() })
		}, ErrInUse, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "run", "hermesd.sock")
			tc.setup(t, path)
			ln, err := Listen(path, nil)
			if err == nil {
				ln.Close()
				t.Fatalf("Listen succeeded, want %v", tc.want)
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
			t.Logf("refusal: %v", err)
			_, serr := os.Lstat(path)
			if exists := serr == nil; exists != tc.keep {
				t.Errorf("after the refusal, %s exists = %v, want %v", path, exists, tc.keep)
			}
		})
	}
}

func mkdir(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

// privateDir is a fresh 0700 directory.
func privateDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	mkdir(t, dir, 0o700)
	return dir
}
