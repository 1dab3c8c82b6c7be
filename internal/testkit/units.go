package testkit

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteUnits writes files (a file name such as "web.yaml" → its content)
// into dir and returns dir. dir is created if need be, private (0700: a
// units directory others may write is refused), and so is each file
// (0600). A file already there is replaced.
func WriteUnits(t testing.TB, dir string, files map[string]string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// UnitsDir writes files (as WriteUnits) into a fresh directory named units
// under t.TempDir() and returns its path.
func UnitsDir(t testing.TB, files map[string]string) string {
	t.Helper()
	return WriteUnits(t, filepath.Join(t.TempDir(), "units"), files)
}
