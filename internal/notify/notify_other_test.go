//go:build !linux

package notify

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestListenUnsupported: without sender credentials Listen fails, says
// so, and leaves no socket behind.
func TestListenUnsupported(t *testing.T) {
	path := filepath.Join(t.TempDir(), "n.sock")
	s, err := Listen(path)
	if !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Listen: got %v, %v; want an error matching errors.ErrUnsupported", s, err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after the failed Listen, %s: got %v, want it gone", path, err)
	}
}

func TestParseFieldsReady(t *testing.T) {
	if got := ParseFields("READY=1\nbad line\n"); len(got) != 1 || got[FieldReady] != "1" {
		t.Errorf("ParseFields: got %v, want READY=1 alone", got)
	}
}
