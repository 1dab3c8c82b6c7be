package ledger

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func temps(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, tempPrefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestStaleTemps: a write removes the temporary files a crashed writer left
// (old ones), not those of writers waiting for the lock (young ones).
func TestStaleTemps(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, tempPrefix+"crashed")
	young := filepath.Join(dir, tempPrefix+"waiting")
	for _, p := range []string{old, young} {
		if err := os.WriteFile(p, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-2 * staleTemp)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	l := openDir(t, dir)
	if err := l.Add(t.Context(), selfEntry(t, "a")); err != nil {
		t.Fatal(err)
	}
	if got := temps(t, dir); len(got) != 1 || got[0] != young {
		t.Errorf("temporary files after a write: %v, want only %s", got, young)
	}
}

// TestFailedUpdateLeavesNoTemp: the temporary file made before the lock
// wait goes when the Update does not write (fn failed, lock not taken).
func TestFailedUpdateLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	l := openDir(t, dir)
	errBoom := errors.New("boom")
	if err := l.Update(t.Context(), func([]Entry) ([]Entry, error) { return nil, errBoom }); !errors.Is(err, errBoom) {
		t.Fatalf("got %v, want %v", err, errBoom)
	}
	if got := temps(t, dir); len(got) != 0 {
		t.Errorf("after a failed fn: temporary files %v", got)
	}
	startHelper(t, "holder", []string{"LEDGER_DIR=" + dir}, nil, "locked")
	if err := l.Add(t.Context(), selfEntry(t, "x")); !errors.Is(err, ErrLocked) {
		t.Fatalf("got %v, want ErrLocked", err)
	}
	if got := temps(t, dir); len(got) != 0 {
		t.Errorf("after a lock timeout: temporary files %v", got)
	}
}
