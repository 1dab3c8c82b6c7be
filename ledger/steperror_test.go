package ledger

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"testing"

	"github.com/hermes-units/hermes/internal/testkit"
)

// TestStepError: a failed write of the temporary file names it once.
func TestStepError(t *testing.T) {
	const name = "/s/ledger.json.tmp-1"
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"write by *os.File", &fs.PathError{Op: "write", Path: name, Err: syscall.ENOSPC}, "ledger: write " + name + ": no space left on device"},
		{"sync by *os.File", &fs.PathError{Op: "sync", Path: name, Err: syscall.EIO}, "ledger: sync " + name + ": input/output error"},
		{"another path", &fs.PathError{Op: "write", Path: "/other", Err: syscall.ENOSPC}, "ledger: write " + name + ": write /other: no space left on device"},
		{"no path", syscall.ENOSPC, "ledger: write " + name + ": no space left on device"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := stepError("write", name, tt.err)
			if got.Error() != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if !errors.Is(got, tt.err) {
				t.Errorf("%v does not wrap %v", got, tt.err)
			}
		})
	}
}

// TestWriteAtomicFullDisk: on a full file system the error of a real write
// names the temporary file once and matches ENOSPC.
func TestWriteAtomicFullDisk(t *testing.T) {
	dir := t.TempDir()
	if err := testkit.MountTmpfs(t, dir, 4<<10); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (needs root): %v; TestStepError covers the message", err)
	}
	err := writeAtomic(dir, dir+"/"+FileName, make([]byte, 64<<10))
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writeAtomic on a full disk: %v, want ENOSPC", err)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		t.Fatalf("%v: no path in the error", err)
	}
	if want := "ledger: write " + pe.Path + ": no space left on device"; err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
	if _, serr := os.Stat(pe.Path); !os.IsNotExist(serr) {
		t.Errorf("temporary file %s left behind: %v", pe.Path, serr)
	}
}

// writeAtomic replaces path with b: temporary file in dir, fsync, rename.
// A reader sees the old file or the new one, never a mix.
func writeAtomic(dir, path string, b []byte) error {
	tmp, err := createTemp(dir)
	if err != nil {
		return err
	}
	return writeTemp(tmp, path, b)
}
