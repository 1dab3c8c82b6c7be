package safefile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReplace(t *testing.T) {
	t.Run("replaces", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "f")
		write(t, path, "old")
		if err := Replace(path, ".f.tmp-*", []byte("new"), 0o640); err != nil {
			t.Fatal(err)
		}
		checkFile(t, path, "new", 0o640)
		checkOnly(t, dir, "f")
	})
	t.Run("link replaced, not followed", func(t *testing.T) {
		dir := t.TempDir()
		target := filepath.Join(dir, "target")
		write(t, target, "theirs")
		path := filepath.Join(dir, "f")
		link(t, target, path)
		if err := Replace(path, ".f.tmp-*", []byte("ours"), 0o600); err != nil {
			t.Fatal(err)
		}
		checkFile(t, path, "ours", 0o600)
		checkFile(t, target, "theirs", 0o600)
	})
	t.Run("failure leaves the old file", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "d")
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(path, "inside"), "x") // a rename over a non-empty directory fails
		if err := Replace(path, ".d.tmp-*", []byte("new"), 0o600); err == nil {
			t.Fatal("Replace over a non-empty directory: got nil, want an error")
		}
		if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
			t.Fatalf("after a failed Replace: got %v, %v; want the directory as it was", fi, err)
		}
		checkOnly(t, dir, "d")
	})
	t.Run("sync dir", func(t *testing.T) {
		if err := SyncDir(t.TempDir()); err != nil {
			t.Fatal(err)
		}
		if err := SyncDir(filepath.Join(t.TempDir(), "missing")); err == nil {
			t.Fatal("SyncDir of a missing directory: got nil, want an error")
		}
	})
}

func checkFile(t *testing.T, path, want string, perm os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != perm {
		t.Errorf("%s: got mode %v, want a regular file of %v", path, fi.Mode(), perm)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != want {
		t.Errorf("%s: got %q, %v; want %q", path, b, err, want)
	}
}

// checkOnly fails unless dir holds exactly name: no temporary file left.
func checkOnly(t *testing.T, dir, name string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != name {
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		t.Errorf("%s holds %v, want only %s", dir, got, name)
	}
}
