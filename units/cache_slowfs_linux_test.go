package units

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/internal/testkit/slowfs"
)

// TestCacheOnSlowFilesystem: on a slow filesystem (a FUSE mount whose
// every operation takes milliseconds), where the runtime's preemption
// signal interrupts stats and opens (EINTR), loads with one Cache read
// each unit file once: an interrupted stat is retried, not taken for a
// changed file.
func TestCacheOnSlowFilesystem(t *testing.T) {
	const n = 20
	dir := t.TempDir()
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("u%02d.yaml", i)] = "command: [sleep, \"600\"]\n"
	}
	back, mnt := filepath.Join(dir, "backing"), filepath.Join(dir, "units")
	testkit.WriteUnits(t, back, files)
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := slowfs.Mount(back, mnt, 5*time.Millisecond)
	if errors.Is(err, slowfs.ErrUnavailable) {
		t.Skipf("a slow filesystem needs a FUSE mount: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Unmount() })
	// Files changed within cacheTrust of their read are read again by
	// design: these are made older than that.
	was := cacheTrust
	cacheTrust = 0
	t.Cleanup(func() { cacheTrust = was })
	c := &Cache{}
	for range 5 {
		if _, err := (&Loader{Cache: c}).LoadDir(mnt); err != nil {
			t.Fatal(err)
		}
	}
	if c.read != n {
		t.Errorf("5 loads of %d unchanged files read %d files, want %d", n, c.read, n)
	}
	for name, k := range f.Opened() {
		if k != 1 {
			t.Errorf("%s opened %d times, want once", name, k)
		}
	}
}
