package testkit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/fsnotify/fsnotify"
)

// WaitFile waits until re matches the content of path (a unit's log, a
// daemon's output), for up to d, and says what the file held if it never
// did. It reads path again at each change in its directory (inotify), so
// the directory must exist; the file need not yet.
func WaitFile(path string, re *regexp.Regexp, d time.Duration) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.Add(filepath.Dir(path)); err != nil {
		return err
	}
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		b, err := os.ReadFile(path) // after Add: no change is missed
		if err == nil && re.Match(b) {
			return nil
		}
		select {
		case <-w.Events:
		case err := <-w.Errors:
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				return err
			}
			// Events were lost: reading the file again is all they would say.
		case <-deadline.C:
			if b, err := os.ReadFile(path); err == nil && re.Match(b) {
				return nil
			}
			return fmt.Errorf("nothing in %s matched %q within %v; it holds:\n%s", path, re, d, b)
		}
	}
}
