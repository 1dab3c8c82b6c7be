package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
)

// TestLogBoundedWhileWriting: a unit that writes 32 MiB as fast as it can
// against log.max_size 256KiB, keep 1. Once it has exited, its log is within
// max_size × (keep + 1) without waiting for any timer: rotation follows the
// writes (inotify), not a 30 s poll.
func TestLogBoundedWhileWriting(t *testing.T) {
	needsProcesses(t, "hermesd processes")
	dir := t.TempDir()
	unit := "shell: \"head -c 33554432 /dev/zero | tr '\\\\0' x\"\nrestart: \"no\"\nlog: {max_size: 256KiB, keep: 1}\n"
	testkit.WriteUnits(t, filepath.Join(dir, "units"), map[string]string{"flood.yaml": unit})
	logs := filepath.Join(dir, "state", "logs")
	if err := os.MkdirAll(logs, 0o700); err != nil {
		t.Fatal(err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Add(logs); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, dir, "gateway")
	d.waitUnit("flood", "exited", func(u control.Unit) bool { return u.State == "exited" })
	path := filepath.Join(logs, "flood.log")
	const maxSize, keep = 256 << 10, 1
	total := func() (cur, all int64) {
		for i, p := range []string{path, path + ".1", path + ".2"} {
			if fi, err := os.Stat(p); err == nil {
				all += fi.Size()
				if i == 0 {
					cur = fi.Size()
				}
			}
		}
		return cur, all
	}
	deadline := time.After(20 * time.Second)
	for {
		cur, all := total()
		if cur <= maxSize && all <= maxSize*(keep+1) {
			return
		}
		select {
		case <-w.Events:
		case <-w.Errors:
		case <-deadline:
			t.Fatalf("log of a unit that has exited takes %d bytes (live file %d), over max_size × (keep + 1) = %d", all, cur, maxSize*(keep+1))
		}
	}
}
