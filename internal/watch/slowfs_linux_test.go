package watch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/internal/testkit/slowfs"
)

// TestNewStatsEachFileOnce: starting to watch a units directory costs one
// listing and one stat of each file (a units directory on a slow
// filesystem pays for each), not two: as many operations reach the
// filesystem as `ls -l` makes, give or take the directories' own.
func TestNewStatsEachFileOnce(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	for i := range 20 {
		files[fmt.Sprintf("u%02d.yaml", i)] = "command: [sleep, \"1\"]\n"
	}
	testkit.WriteUnits(t, filepath.Join(dir, "backing"), files)
	mnt := filepath.Join(dir, "units")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := slowfs.Mount(filepath.Join(dir, "backing"), mnt, 0)
	if errors.Is(err, slowfs.ErrUnavailable) {
		t.Skipf("needs a FUSE mount: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Unmount()

	before := f.Ops()
	entries, err := os.ReadDir(mnt)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(mnt, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	ls := f.Ops() - before

	before = f.Ops()
	w, err := New(Options{Dir: mnt})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if got := f.Ops() - before; got > ls+4 {
		t.Errorf("New made %d operations on the units directory; a listing and a stat of each file make %d", got, ls)
	}
}
