package ledger

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestLinkedLockFiles: a symbolic link planted at ledger.lock or
// ledger.queue is never followed: the write is refused with a message that
// names the link, and the link's target is neither created nor written.
func TestLinkedLockFiles(t *testing.T) {
	for _, name := range []string{LockName, QueueName} {
		t.Run(name, func(t *testing.T) {
			l := openTemp(t)
			target := filepath.Join(t.TempDir(), "victim")
			if err := os.Symlink(target, filepath.Join(l.Dir(), name)); err != nil {
				t.Fatal(err)
			}
			err := l.Add(t.Context(), selfEntry(t, "api"))
			if name == LockName && err == nil {
				t.Fatalf("Add through a linked %s succeeded", name)
			}
			if _, serr := os.Lstat(target); !errors.Is(serr, fs.ErrNotExist) {
				t.Fatalf("the link's target was created (Add: %v)", err)
			}
		})
	}
}
