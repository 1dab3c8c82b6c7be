package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestOpenFile(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir, path string) // plants something at path
		want  error                                // nil: the open succeeds
	}{
		{"missing file is created", func(t *testing.T, dir, path string) {}, nil},
		{"existing regular file", func(t *testing.T, dir, path string) {
			write(t, path, "old\n")
		}, nil},
		{"link to a file", func(t *testing.T, dir, path string) {
			target := filepath.Join(dir, "victim")
			write(t, target, "secret\n")
			link(t, target, path)
		}, ErrSymlink},
		{"dangling link", func(t *testing.T, dir, path string) {
			link(t, filepath.Join(dir, "nowhere"), path)
		}, ErrSymlink},
		{"FIFO", func(t *testing.T, dir, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}, ErrNotRegular},
		{"directory", func(t *testing.T, dir, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, ErrNotRegular},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "file")
			tc.setup(t, dir, path)
			f, err := OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("OpenFile: %v", err)
				}
				defer f.Close()
				if _, err := f.WriteString("x"); err != nil {
					t.Fatalf("write: %v", err)
				}
				return
			}
			if err == nil {
				f.Close()
				t.Fatalf("OpenFile succeeded, want %v", tc.want)
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want an error matching %v", err, tc.want)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "victim")); err == nil && string(b) != "secret\n" {
				t.Errorf("the link's target changed: %q", b)
			}
		})
	}
}

func TestWriteFileRefusesLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "victim")
	write(t, target, "secret\n")
	path := filepath.Join(dir, "notice")
	link(t, target, path)
	if err := WriteFile(path, []byte("hello"), 0o600); !errors.Is(err, ErrSymlink) {
		t.Fatalf("got %v, want ErrSymlink", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "secret\n" {
		t.Errorf("the link's target changed: %q", b)
	}
}

func TestCheckOwn(t *testing.T) {
	dir := t.TempDir()
	t.Run("own file", func(t *testing.T) {
		f := open(t, filepath.Join(dir, "own"))
		if err := CheckOwn(f); err != nil {
			t.Fatalf("CheckOwn: %v", err)
		}
	})
	t.Run("hard link", func(t *testing.T) {
		p := filepath.Join(dir, "linked")
		f := open(t, p)
		if err := os.Link(p, filepath.Join(dir, "other-name")); err != nil {
			t.Fatal(err)
		}
		if err := CheckOwn(f); !errors.Is(err, ErrNotOurs) {
			t.Fatalf("got %v, want ErrNotOurs", err)
		}
	})
	t.Run("another user's file", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to give a file to another uid; the hard-link case covers the refusal path")
		}
		p := filepath.Join(dir, "theirs")
		f := open(t, p)
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := CheckOwn(f); !errors.Is(err, ErrNotOurs) {
			t.Fatalf("got %v, want ErrNotOurs", err)
		}
	})
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/a.log":     "/tmp/a.log",
		"/tmp/a b.log":   "'/tmp/a b.log'",
		"/tmp/it's.log":  `'/tmp/it'\''s.log'`,
		"/tmp/\x1b[2J.l": "'/tmp/\x1b[2J.l'",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q): got %q, want %q", in, got, want)
		}
	}
}

func open(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func link(t *testing.T, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}
