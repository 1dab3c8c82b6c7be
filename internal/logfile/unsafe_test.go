package logfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hermes-units/hermes/internal/safefile"
)

// TestOpenRefusesPlantedFiles: what another user can plant at a log path in
// a shared directory (/tmp) is refused, never written through, and the error
// says what to do. The directory cases are checked with CheckDir as well,
// which is what a unit's load reports.
func TestOpenRefusesPlantedFiles(t *testing.T) {
	for _, tc := range []struct {
		name   string
		root   bool                                 // needs root (a file of another uid)
		sticky bool                                 // planted in a sticky directory (as /tmp) others can write
		setup  func(t *testing.T, dir, path string) // dir exists (mode 0700, or 01777 if sticky) before setup
		want   error
		fix    string // part of the message: what to do
	}{
		{"a link to a file hermesd can write", false, true, func(t *testing.T, dir, path string) {
			must(t, os.WriteFile(filepath.Join(dir, "victim"), []byte("secret\n"), 0o600))
			must(t, os.Symlink(filepath.Join(dir, "victim"), path))
		}, safefile.ErrSymlink, "remove the link"},
		{"a dangling link", false, true, func(t *testing.T, dir, path string) {
			must(t, os.Symlink(filepath.Join(dir, "victim"), path))
		}, safefile.ErrSymlink, "remove the link"},
		{"a FIFO", false, true, func(t *testing.T, dir, path string) {
			must(t, syscall.Mkfifo(path, 0o666))
		}, safefile.ErrNotRegular, "regular file"},
		{"a hard link in a sticky directory", false, true, func(t *testing.T, dir, path string) {
			must(t, os.WriteFile(filepath.Join(dir, "victim"), []byte("secret\n"), 0o600))
			must(t, os.Link(filepath.Join(dir, "victim"), path))
		}, safefile.ErrNotOurs, "rm "},
		{"another user's file in a sticky directory", true, true, func(t *testing.T, dir, path string) {
			must(t, os.WriteFile(path, nil, 0o666))
			must(t, os.Chown(path, 65534, 65534))
		}, safefile.ErrNotOurs, "rm "},
		{"a directory others can write, not sticky", false, false, func(t *testing.T, dir, path string) {
			must(t, os.Chmod(dir, 0o777))
		}, ErrUnsafeDir, "chmod go-w "},
		{"a directory of another user", true, false, func(t *testing.T, dir, path string) {
			must(t, os.Chown(dir, 65534, 65534))
		}, ErrUnsafeDir, "chown 0 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root && os.Geteuid() != 0 {
				t.Skip("needs root to give a file to another uid; the hard-link and mode cases cover the same refusals")
			}
			dir := filepath.Join(t.TempDir(), "shared")
			must(t, os.Mkdir(dir, 0o700))
			if tc.sticky {
				sticky(t, dir)
			}
			path := filepath.Join(dir, "u.log")
			tc.setup(t, dir, path)
			f, err := Open(path)
			if err == nil {
				f.Close()
				t.Fatalf("Open succeeded, want %v", tc.want)
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.fix) {
				t.Fatalf("got %v, want an error matching %v that says %q", err, tc.want, tc.fix)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "victim")); err == nil && string(b) != "secret\n" {
				t.Errorf("the victim changed: %q", b)
			} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Error(err)
			}
			if _, err := os.Lstat(filepath.Join(dir, "victim")); tc.name == "a dangling link" && err == nil {
				t.Error("the dangling link's target was created")
			}
		})
	}
	t.Run("our own file in a sticky directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "tmp")
		must(t, os.Mkdir(dir, 0o700))
		sticky(t, dir)
		f, err := Open(filepath.Join(dir, "u.log"))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		f.Close()
		if f, err = Open(filepath.Join(dir, "u.log")); err != nil {
			t.Fatalf("Open again: %v", err)
		}
		f.Close()
	})
}

// TestRotateThroughLinkRefused: a link planted at the log's own name is not
// truncated through.
func TestRotateThroughLinkRefused(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	must(t, os.WriteFile(victim, []byte("secret secret secret\n"), 0o600))
	path := filepath.Join(dir, "u.log")
	must(t, os.Symlink(victim, path))
	if _, err := Rotate(path, 4, 0); !errors.Is(err, safefile.ErrSymlink) {
		t.Fatalf("Rotate: got %v, want ErrSymlink", err)
	}
	if got := read(t, victim); got != "secret secret secret\n" {
		t.Errorf("the victim was truncated: %q", got)
	}
}

func sticky(t *testing.T, dir string) {
	t.Helper()
	must(t, os.Chmod(dir, 0o777|fs.ModeSticky))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
