package proc

import (
	"errors"
	"os"
	"slices"
	"syscall"
	"testing"
)

func TestUIDAndRSS(t *testing.T) {
	uid, err := UID(os.Getpid())
	if err != nil || uid != os.Getuid() {
		t.Errorf("UID(self): got %d, %v; want %d", uid, err, os.Getuid())
	}
	if rss, err := RSS(os.Getpid()); err != nil || rss <= 0 {
		t.Errorf("RSS(self): got %d, %v; want more than 0 bytes", rss, err)
	}
	if _, err := UID(0); !errors.Is(err, ErrGone) {
		t.Errorf("UID(0): got %v, want ErrGone", err)
	}
	pid := reapedPID(t)
	if _, err := RSS(pid); !errors.Is(err, ErrGone) {
		t.Errorf("RSS of exited pid %d: got %v, want ErrGone", pid, err)
	}
}

func TestDescriptorFile(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "held")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	dev, ino, err := DescriptorFile(os.Getpid(), int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	if want := fileIno(t, fi); ino != want || dev == 0 {
		t.Errorf("DescriptorFile: got dev %d ino %d, want ino %d", dev, ino, want)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	rfi, err := r.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if _, ino, err := DescriptorFile(os.Getpid(), int(w.Fd())); err != nil || ino != fileIno(t, rfi) {
		t.Errorf("DescriptorFile of a pipe's write end: ino %d, %v; want the pipe's inode %d", ino, err, fileIno(t, rfi))
	}
	d, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, _, err := DescriptorFile(os.Getpid(), int(d.Fd())); err == nil {
		t.Errorf("DescriptorFile of a directory: got no error, want one (neither a regular file nor a pipe)")
	}
}

func fileIno(t *testing.T, fi os.FileInfo) uint64 {
	t.Helper()
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Fatalf("%T is no *syscall.Stat_t", fi.Sys())
	}
	return st.Ino
}

func TestOwnDescriptors(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fds, err := OwnDescriptors()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(fds, int(f.Fd())) || !slices.Contains(fds, 0) {
		t.Errorf("OwnDescriptors: got %v, want 0 and %d among them", fds, f.Fd())
	}
}
