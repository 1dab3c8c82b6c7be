package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// patience bounds every wait on an event; it is never slept.
const patience = 3 * time.Second

// verdict is one event as Run classified it.
type verdict struct {
	name     string
	op       fsnotify.Op
	relevant bool
	watching bool // the units directory is watched after this event
}

// harness runs a Watcher and records its verdicts, so that a test knows
// which events were taken into account without sleeping: after an
// operation it creates a hidden barrier file and waits until Run has seen
// it, and inotify delivers events in order.
type harness struct {
	t       *testing.T
	w       *Watcher
	mu      sync.Mutex
	seen    []verdict     // guarded by mu
	changed chan struct{} // closed and replaced on each verdict; guarded by mu
	nbar    int
}

func start(t *testing.T, opts Options) *harness {
	t.Helper()
	w, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h := &harness{t: t, w: w, changed: make(chan struct{})}
	w.observe = func(ev fsnotify.Event, rel bool) {
		h.mu.Lock()
		defer h.mu.Unlock()
		_, watching := w.watched[w.dir] // safe: observe runs on Run's goroutine
		h.seen = append(h.seen, verdict{ev.Name, ev.Op, rel, watching})
		close(h.changed)
		h.changed = make(chan struct{})
	}
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Run returned %v after cancel, want nil", err)
		}
	})
	return h
}

// step runs op and returns the verdicts of the events it caused, once a
// barrier file created in barrierDir afterwards has been seen.
func (h *harness) step(barrierDir string, op func()) []verdict {
	h.t.Helper()
	h.mu.Lock()
	mark := len(h.seen)
	h.mu.Unlock()
	op()
	h.nbar++
	barrier := filepath.Join(barrierDir, fmt.Sprintf(".barrier-%d", h.nbar))
	write(h.t, barrier, "")
	deadline := time.After(patience)
	for {
		h.mu.Lock()
		seen, changed := slices.Clone(h.seen[mark:]), h.changed
		h.mu.Unlock()
		for i, v := range seen {
			if v.name == barrier {
				return seen[:i]
			}
		}
		select {
		case <-changed:
		case <-deadline:
			h.t.Fatalf("barrier %s not seen within %v; events: %v", barrier, patience, seen)
		}
	}
}

// expectChange runs op and checks that some event it caused counts and that
// a notification follows.
func (h *harness) expectChange(barrierDir string, op func()) {
	h.t.Helper()
	h.drain()
	vs := h.step(barrierDir, op)
	if !slices.ContainsFunc(vs, func(v verdict) bool { return v.relevant }) {
		h.t.Errorf("no event counted as a change; events: %v", vs)
	}
	h.awaitChange()
}

// expectChangeNoBarrier runs op and waits until an event it caused counts
// and satisfies match (for the units directory coming or going, that means
// the watches were updated), then for the notification.
func (h *harness) expectChangeNoBarrier(match func(verdict) bool, op func()) {
	h.t.Helper()
	h.drain()
	h.mu.Lock()
	mark := len(h.seen)
	h.mu.Unlock()
	op()
	deadline := time.After(patience)
	for {
		h.mu.Lock()
		seen, changed := slices.Clone(h.seen[mark:]), h.changed
		h.mu.Unlock()
		if slices.ContainsFunc(seen, func(v verdict) bool { return v.relevant && match(v) }) {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			h.t.Fatalf("no event counted as a change within %v; events: %v", patience, seen)
		}
	}
	h.awaitChange()
}

func (h *harness) awaitChange() {
	h.t.Helper()
	select {
	case <-h.w.Changes():
	case <-time.After(patience):
		h.t.Fatalf("no change notified within %v", patience)
	}
}

// expectNoChange runs op and checks that no event it caused counts.
func (h *harness) expectNoChange(barrierDir string, op func()) {
	h.t.Helper()
	h.drain()
	vs := h.step(barrierDir, op)
	for _, v := range vs {
		if v.relevant {
			h.t.Errorf("%s %s counted as a change, want ignored", v.op, v.name)
		}
	}
	select {
	case <-h.w.Changes():
		h.t.Errorf("a change was notified, want none")
	default:
	}
}

// drain discards notifications of earlier steps, once the debouncer has had
// the time to send them; the verdicts, not the notifications, are what the
// negative checks rest on.
func (h *harness) drain() {
	select {
	case <-h.w.Changes():
	default:
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestUnitEdits(t *testing.T) {
	tests := []struct {
		name string
		edit func(t *testing.T, dir string)
	}{
		{"atomic save: temp file renamed over", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, ".web.yaml.tmp"), "command: [web, --v2]\n")
			must(t, os.Rename(filepath.Join(dir, ".web.yaml.tmp"), filepath.Join(dir, "web.yaml")))
		}},
		{"atomic save: visible temp name", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "web.yaml.1234.tmp"), "command: [web, --v2]\n")
			must(t, os.Rename(filepath.Join(dir, "web.yaml.1234.tmp"), filepath.Join(dir, "web.yaml")))
		}},
		{"vim save with backup", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "4913"), "")
			must(t, os.Remove(filepath.Join(dir, "4913")))
			must(t, os.Rename(filepath.Join(dir, "web.yaml"), filepath.Join(dir, "web.yaml~")))
			write(t, filepath.Join(dir, "web.yaml"), "command: [web, --v2]\n")
			must(t, os.Remove(filepath.Join(dir, "web.yaml~")))
		}},
		{"write in place", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "web.yaml"), "command: [web, --v2]\n")
		}},
		{"new unit", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "db.yaml"), "command: [db]\n")
		}},
		{"deleted unit", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, "web.yaml")))
		}},
		{"renamed unit", func(t *testing.T, dir string) {
			must(t, os.Rename(filepath.Join(dir, "web.yaml"), filepath.Join(dir, "www.yaml")))
		}},
		{"permissions changed", func(t *testing.T, dir string) {
			must(t, os.Chmod(filepath.Join(dir, "web.yaml"), 0o600))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "units")
			must(t, os.Mkdir(dir, 0o755))
			write(t, filepath.Join(dir, "web.yaml"), "command: [web]\n")
			h := start(t, Options{Dir: dir})
			h.expectChange(dir, func() { tt.edit(t, dir) })
		})
	}
}

func TestScratchFilesIgnored(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "units")
	must(t, os.Mkdir(dir, 0o755))
	web := filepath.Join(dir, "web.yaml")
	write(t, web, "command: [web]\n")
	h := start(t, Options{Dir: dir})
	for _, name := range []string{".web.yaml.swp", ".web.yaml.swx", "web.yaml~", "4913", ".#web.yaml", "#web.yaml#", "web.yaml.tmp", ".hidden"} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name)
			h.expectNoChange(dir, func() {
				write(t, p, "scratch")
				write(t, p, "scratch again")
				must(t, os.Chmod(p, 0o600))
				must(t, os.Rename(p, p+".tmp"))
				must(t, os.Remove(p+".tmp"))
			})
		})
	}
	t.Run("touch", func(t *testing.T) {
		now := time.Now().Add(time.Hour)
		h.expectNoChange(dir, func() { must(t, os.Chtimes(web, now, now)) })
	})
	t.Run("chmod to the same mode", func(t *testing.T) {
		h.expectNoChange(dir, func() { must(t, os.Chmod(web, 0o644)) })
	})
	t.Run("a unit still counts afterwards", func(t *testing.T) {
		h.expectChange(dir, func() { write(t, web, "command: [web, --v2]\n") })
	})
}

// A burst of writes is one notification when Run sees it within one
// debounce window (the window's arithmetic is TestDebounceBurst's).
func TestBurst(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "units")
	must(t, os.Mkdir(dir, 0o755))
	h := start(t, Options{Dir: dir, Debounce: time.Hour})
	vs := h.step(dir, func() {
		for i := range 100 {
			write(t, filepath.Join(dir, fmt.Sprintf("u%d.yaml", i%10)), fmt.Sprint(i))
		}
	})
	if n := len(vs); n < 100 {
		t.Errorf("saw %d events, want at least 100", n)
	}
	select {
	case <-h.w.Changes():
		t.Error("notified before the burst went quiet, want nothing within the debounce window")
	default:
	}
}

func TestDirectorySwap(t *testing.T) {
	swaps := []struct {
		name string
		swap func(t *testing.T, units, next string)
	}{
		{"two renames", func(t *testing.T, units, next string) {
			must(t, os.Rename(units, units+".old"))
			must(t, os.Rename(next, units))
		}},
		{"rename exchange", func(t *testing.T, units, next string) {
			must(t, unix.Renameat2(unix.AT_FDCWD, next, unix.AT_FDCWD, units, unix.RENAME_EXCHANGE))
			must(t, os.Rename(next, units+".old"))
		}},
		{"remove and recreate", func(t *testing.T, units, next string) {
			must(t, os.RemoveAll(units))
			must(t, os.Rename(next, units))
			must(t, os.Mkdir(units+".old", 0o755)) // nothing left to edit of the old one
		}},
	}
	for _, tt := range swaps {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			units, next := filepath.Join(root, "units"), filepath.Join(root, "units.next")
			must(t, os.Mkdir(units, 0o755))
			write(t, filepath.Join(units, "a.yaml"), "a")
			must(t, os.Mkdir(next, 0o755))
			write(t, filepath.Join(next, "b.yaml"), "b")
			h := start(t, Options{Dir: units})

			// The barrier goes in the parent: events in the new directory
			// before its watch is added are lost (the notification makes
			// the daemon rescan it).
			h.expectChange(root, func() { tt.swap(t, units, next) })
			h.expectChange(units, func() { write(t, filepath.Join(units, "c.yaml"), "c") })
			h.expectChange(units, func() { write(t, filepath.Join(units, "b.yaml"), "b2") })
			// The old directory is no longer the units directory.
			h.expectNoChange(units, func() { write(t, filepath.Join(units+".old", "z.yaml"), "z") })
		})
	}
}

func TestSymlinkSwap(t *testing.T) {
	root := t.TempDir()
	v1, v2 := filepath.Join(root, "v1"), filepath.Join(root, "v2")
	must(t, os.Mkdir(v1, 0o755))
	must(t, os.Mkdir(v2, 0o755))
	units := filepath.Join(root, "units")
	must(t, os.Symlink("v1", units))
	h := start(t, Options{Dir: units})

	h.expectChange(units, func() { write(t, filepath.Join(v1, "a.yaml"), "a") })
	h.expectChange(root, func() {
		must(t, os.Symlink("v2", units+".tmp"))
		must(t, os.Rename(units+".tmp", units))
	})
	h.expectChange(units, func() { write(t, filepath.Join(v2, "b.yaml"), "b") })
	h.expectNoChange(units, func() { write(t, filepath.Join(v1, "z.yaml"), "z") })
}

func TestDirectoryCreatedLater(t *testing.T) {
	root := t.TempDir()
	units := filepath.Join(root, "config", "hermes", "units")
	h := start(t, Options{Dir: units})
	// No directory is watched both before and after these steps, so there
	// is no barrier: the notification itself is what is waited for.
	created := func(v verdict) bool { return v.watching }
	removed := func(v verdict) bool { return !v.watching }
	h.expectChangeNoBarrier(created, func() { must(t, os.MkdirAll(units, 0o755)) })
	h.expectChange(units, func() { write(t, filepath.Join(units, "web.yaml"), "w") })
	h.expectChangeNoBarrier(removed, func() { must(t, os.RemoveAll(filepath.Join(root, "config"))) })
	h.expectChangeNoBarrier(created, func() { must(t, os.MkdirAll(units, 0o755)) })
	h.expectChange(units, func() { write(t, filepath.Join(units, "db.yaml"), "d") })
}

func TestConfig(t *testing.T) {
	// The usual layout: the config file next to the units directory.
	root := t.TempDir()
	units := filepath.Join(root, "units")
	must(t, os.Mkdir(units, 0o755))
	config := filepath.Join(root, "hermes.yaml")
	write(t, config, "gateway: {}\n")
	h := start(t, Options{Dir: units, Config: config})

	t.Run("replaced by rename", func(t *testing.T) {
		h.expectChange(root, func() {
			write(t, filepath.Join(root, ".hermes.yaml.tmp"), "gateway: {listen: ':1'}\n")
			must(t, os.Rename(filepath.Join(root, ".hermes.yaml.tmp"), config))
		})
	})
	t.Run("written in place", func(t *testing.T) {
		h.expectChange(root, func() { write(t, config, "gateway: {listen: ':2'}\n") })
	})
	t.Run("other files beside it", func(t *testing.T) {
		h.expectNoChange(root, func() {
			write(t, filepath.Join(root, "notes.txt"), "n")
			write(t, filepath.Join(root, "hermes.yaml.bak"), "b")
			must(t, os.Mkdir(filepath.Join(root, "state"), 0o700))
		})
	})
	t.Run("removed and recreated", func(t *testing.T) {
		h.expectChange(root, func() { must(t, os.Remove(config)) })
		h.expectChange(root, func() { write(t, config, "gateway: {}\n") })
	})
	t.Run("units still watched", func(t *testing.T) {
		h.expectChange(units, func() { write(t, filepath.Join(units, "web.yaml"), "w") })
	})
}

func TestConfigDirectoryCreatedLater(t *testing.T) {
	root := t.TempDir()
	units := filepath.Join(root, "units")
	must(t, os.Mkdir(units, 0o755))
	config := filepath.Join(root, "etc", "hermes", "hermes.yaml")
	h := start(t, Options{Dir: units, Config: config})
	h.expectNoChange(root, func() { must(t, os.MkdirAll(filepath.Dir(config), 0o755)) })
	h.expectChange(filepath.Dir(config), func() { write(t, config, "gateway: {}\n") })
}

func TestNew(t *testing.T) {
	tests := []struct {
		name string
		opts Options
	}{
		{"no directory", Options{}},
		{"negative debounce", Options{Dir: t.TempDir(), Debounce: -time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if w, err := New(tt.opts); err == nil {
				w.Close()
				t.Errorf("New(%+v) succeeded, want an error", tt.opts)
			}
		})
	}
	t.Run("Close without Run", func(t *testing.T) {
		w, err := New(Options{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Errorf("Close = %v", err)
		}
	})
}

func TestIgnored(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"web.yaml", false},
		{"web.yml", false},
		{"4913", true},
		{"49130", false},
		{".web.yaml.swp", true},
		{".web.yaml.swx", true},
		{"web.yaml~", true},
		{".#web.yaml", true},
		{"#web.yaml#", true},
		{".hidden", true},
		{"web.yaml.tmp", true},
		{"tmp.yaml", false},
		{"README", false},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.name, "/", "_"), func(t *testing.T) {
			if got := Ignored(tt.name); got != tt.want {
				t.Errorf("Ignored(%q) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}
