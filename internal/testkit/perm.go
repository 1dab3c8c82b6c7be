package testkit

import (
	"os"
	"testing"
)

// Perms fails t (Errorf) for each path whose permission bits are not the
// ones want gives it ("state dir" → 0700, its files → 0600: what nobody
// else may read or replace); a path it cannot stat fails t at once.
func Perms(t testing.TB, want map[string]os.FileMode) {
	t.Helper()
	for path, mode := range want {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != mode {
			t.Errorf("%s: mode %04o, want %04o", path, got, mode)
		}
	}
}
