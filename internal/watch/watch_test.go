//go:build linux

package watch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/units"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// patience bounds every wait on an event; it is never slept.
const patience = 3 * time.Second

// seenEvent is one event as Run classified it.
type seenEvent struct {
	name     string
	op       op
	verdict  verdict
	relevant bool // verdict is not verdictNone
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
	seen    []seenEvent   // guarded by mu
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
	w.observe = func(ev event, v verdict) {
		h.mu.Lock()
		defer h.mu.Unlock()
		_, watching := w.watched[w.dir] // safe: observe runs on Run's goroutine
		h.seen = append(h.seen, seenEvent{ev.name, ev.op, v, v != verdictNone, watching})
		close(h.changed)
		h.changed = make(chan struct{})
	}
	stop := testkit.Run(t, w.Run)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Run returned %v after cancel, want nil", err)
		}
	})
	return h
}

// step runs op and returns the verdicts of the events it caused, once a
// barrier file created in barrierDir afterwards has been seen.
func (h *harness) step(barrierDir string, op func()) []seenEvent {
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
	if !slices.ContainsFunc(vs, func(v seenEvent) bool { return v.relevant }) {
		h.t.Errorf("no event counted as a change; events: %v", vs)
	}
	h.awaitChange()
}

// expectChangeNoBarrier runs op and waits until an event it caused counts
// and satisfies match (for the units directory coming or going, that means
// the watches were updated), then for the notification.
func (h *harness) expectChangeNoBarrier(match func(seenEvent) bool, op func()) {
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
		if slices.ContainsFunc(seen, func(v seenEvent) bool { return v.relevant && match(v) }) {
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
	testkit.Receive(h.t, patience, h.w.Changes(), "no change notified within %v", patience)
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
	if _, ok := testkit.Ready(h.w.Changes()); ok {
		h.t.Errorf("a change was notified, want none")
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
		name  string
		edit  func(t *testing.T, dir string)
		names []string // what Changed says changed
	}{
		{"atomic save: temp file renamed over", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, ".web.yaml.tmp"), "command: [web, --v2]\n")
			must(t, os.Rename(filepath.Join(dir, ".web.yaml.tmp"), filepath.Join(dir, "web.yaml")))
		}, []string{"web.yaml"}},
		{"atomic save: visible temp name", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "web.yaml.1234.tmp"), "command: [web, --v2]\n")
			must(t, os.Rename(filepath.Join(dir, "web.yaml.1234.tmp"), filepath.Join(dir, "web.yaml")))
		}, []string{"web.yaml"}},
		{"vim save with backup", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "4913"), "")
			must(t, os.Remove(filepath.Join(dir, "4913")))
			must(t, os.Rename(filepath.Join(dir, "web.yaml"), filepath.Join(dir, "web.yaml~")))
			write(t, filepath.Join(dir, "web.yaml"), "command: [web, --v2]\n")
			must(t, os.Remove(filepath.Join(dir, "web.yaml~")))
		}, []string{"web.yaml"}},
		{"write in place", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "web.yaml"), "command: [web, --v2]\n")
		}, []string{"web.yaml"}},
		{"new unit", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "db.yaml"), "command: [db]\n")
		}, []string{"db.yaml"}},
		{"deleted unit", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, "web.yaml")))
		}, []string{"web.yaml"}},
		{"renamed unit", func(t *testing.T, dir string) {
			must(t, os.Rename(filepath.Join(dir, "web.yaml"), filepath.Join(dir, "www.yaml")))
		}, []string{"web.yaml", "www.yaml"}},
		{"permissions changed", func(t *testing.T, dir string) {
			must(t, os.Chmod(filepath.Join(dir, "web.yaml"), 0o600))
		}, []string{"web.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "units")
			must(t, os.Mkdir(dir, 0o755))
			write(t, filepath.Join(dir, "web.yaml"), "command: [web]\n")
			h := start(t, Options{Dir: dir})
			if names, all := h.w.Changed(); !all || len(names) > 0 {
				t.Errorf("Changed before any event: %v, all %v; want all", names, all)
			}
			h.expectChange(dir, func() { tt.edit(t, dir) })
			if names, all := h.w.Changed(); all || !slices.Equal(names, tt.names) {
				t.Errorf("Changed: %v, all %v; want %v alone", names, all, tt.names)
			}
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

// Writes to a file still open are a save in progress: nothing is notified
// until the file is closed, and then at once (the quiet period here is an
// hour, so only the close can have notified).
func TestWriteInProgress(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "units")
	must(t, os.Mkdir(dir, 0o755))
	web := filepath.Join(dir, "web.yaml")
	write(t, web, "command: [web]\n")
	h := start(t, Options{Dir: dir, Debounce: time.Hour})
	f, err := os.OpenFile(web, os.O_WRONLY|os.O_TRUNC, 0)
	must(t, err)
	defer f.Close()
	vs := h.step(dir, func() {
		for i := range 100 {
			if _, err := fmt.Fprintf(f, "# line %d\n", i); err != nil {
				t.Fatal(err)
			}
		}
	})
	if len(vs) == 0 { // the kernel merges repeated identical events not yet read
		t.Fatal("saw no event of the writes")
	}
	for _, v := range vs {
		if v.verdict != verdictQuiet {
			t.Errorf("%s %s: verdict %v, want %v (a write not yet closed)", v.op, v.name, v.verdict, verdictQuiet)
		}
	}
	if _, ok := testkit.Ready(h.w.Changes()); ok {
		t.Fatal("notified while the file was still open for writing, want nothing before its close")
	}
	h.expectChange(dir, func() { must(t, f.Close()) })
}

// A burst of completed saves nobody reads yet is one notification.
func TestBurstCoalesced(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "units")
	must(t, os.Mkdir(dir, 0o755))
	h := start(t, Options{Dir: dir, Debounce: time.Hour})
	vs := h.step(dir, func() {
		for i := range 100 {
			write(t, filepath.Join(dir, fmt.Sprintf("u%d.yaml", i%10)), fmt.Sprint(i))
		}
	})
	if !slices.ContainsFunc(vs, func(v seenEvent) bool { return v.verdict == verdictComplete }) {
		t.Fatalf("no event completed a save; events: %v", vs)
	}
	h.awaitChange()
	if _, ok := testkit.Ready(h.w.Changes()); ok {
		t.Error("a second notification is pending, want the burst coalesced into one")
	}
}

// snapshot reads the unit files of dir as a reconciler's rescan would.
func snapshot(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	for _, e := range entries {
		if !units.IsUnitFile(e.Name()) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			data = []byte("error: " + err.Error())
		}
		fmt.Fprintf(&b, "%s=%q ", e.Name(), data)
	}
	return b.String()
}

// Each way editors and tools save a unit file is notified at once (the
// quiet period is an hour, so only an event that marks the save complete
// can have notified), and a rescan on each notification sees either the
// old files or the final ones: never a truncated, half-written or missing
// file, never the old content after the new. So a level-based reconciler
// applies the save once, with its final content.
func TestSaveStyles(t *testing.T) {
	const (
		old = "command: [web, --v1]\n"
		new = "command: [web, --v2]\n" + "# a long tail, written in a second write(2)\n"
	)
	// writeChunks writes content in place in two write calls, as editors
	// writing a buffer in blocks do, and fsyncs before closing.
	writeChunks := func(t *testing.T, path string, flag int, content string) {
		f, err := os.OpenFile(path, flag, 0o644)
		must(t, err)
		half := len(content) / 2
		_, err = f.WriteString(content[:half])
		must(t, err)
		_, err = f.WriteString(content[half:])
		must(t, err)
		must(t, f.Sync())
		must(t, f.Close())
	}
	styles := []struct {
		name string
		save func(t *testing.T, root, dir string)
	}{
		{"rename over (VS Code, most editors)", func(t *testing.T, _, dir string) {
			tmp := filepath.Join(dir, ".web.yaml.tmp-1234")
			writeChunks(t, tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, new)
			must(t, os.Rename(tmp, filepath.Join(dir, "web.yaml")))
		}},
		{"rename over from a visible temp name", func(t *testing.T, _, dir string) {
			tmp := filepath.Join(dir, "web.yaml.1234")
			writeChunks(t, tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, new)
			must(t, os.Rename(tmp, filepath.Join(dir, "web.yaml")))
		}},
		{"vim backupcopy=yes: copy to a backup, then write in place", func(t *testing.T, _, dir string) {
			web := filepath.Join(dir, "web.yaml")
			write(t, filepath.Join(dir, "4913"), "")
			must(t, os.Remove(filepath.Join(dir, "4913")))
			write(t, web+"~", old)
			writeChunks(t, web, os.O_WRONLY|os.O_TRUNC, new)
			must(t, os.Remove(web+"~"))
		}},
		{"vim backupcopy=no: rename to a backup, then write a new file", func(t *testing.T, _, dir string) {
			web := filepath.Join(dir, "web.yaml")
			write(t, filepath.Join(dir, "4913"), "")
			must(t, os.Remove(filepath.Join(dir, "4913")))
			must(t, os.Rename(web, web+"~"))
			writeChunks(t, web, os.O_WRONLY|os.O_CREATE|os.O_EXCL, new)
			must(t, os.Chmod(web, 0o644))
			must(t, os.Remove(web+"~"))
		}},
		{"nano: write in place", func(t *testing.T, _, dir string) {
			writeChunks(t, filepath.Join(dir, "web.yaml"), os.O_WRONLY|os.O_TRUNC, new)
		}},
		{"sed -i", func(t *testing.T, _, dir string) {
			// GNU sed: a temp file sedXXXXXX beside the file, renamed over it.
			script := `s/--v1\]/--v2]\n# a long tail, written in a second write(2)/`
			out, err := exec.Command("sed", "-i", script, filepath.Join(dir, "web.yaml")).CombinedOutput()
			if err != nil {
				t.Fatalf("sed -i: %v\n%s", err, out)
			}
		}},
		{"directory swap", func(t *testing.T, root, dir string) {
			next := filepath.Join(root, "units.next")
			must(t, os.Mkdir(next, 0o755))
			write(t, filepath.Join(next, "web.yaml"), new)
			must(t, os.Rename(dir, filepath.Join(root, "units.old")))
			must(t, os.Rename(next, dir))
		}},
	}
	for _, tt := range styles {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "units")
			must(t, os.Mkdir(dir, 0o755))
			write(t, filepath.Join(dir, "web.yaml"), old)
			before := snapshot(dir)
			h := start(t, Options{Dir: dir, Debounce: time.Hour})

			// The reconciler: a rescan on each notification.
			ask := make(chan chan []string)
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() {
				defer close(done)
				var snaps []string
				for {
					select {
					case <-h.w.Changes():
						snaps = append(snaps, snapshot(dir))
					case reply := <-ask:
						select {
						case <-h.w.Changes():
							snaps = append(snaps, snapshot(dir))
						default:
						}
						reply <- snaps
						return
					case <-ctx.Done():
						return
					}
				}
			}()
			defer func() { cancel(); <-done }()

			// The barrier goes in the parent, which is watched before and
			// after a directory swap; every notification of the events
			// before it is sent by the time it is seen.
			h.step(root, func() { tt.save(t, root, dir) })
			after := snapshot(dir)
			if after == before {
				t.Fatalf("the save changed nothing: %s", after)
			}
			reply := make(chan []string)
			ask <- reply
			snaps := <-reply
			if len(snaps) == 0 {
				t.Fatal("no notification: nothing marked the save complete")
			}
			for i, s := range snaps {
				switch {
				case s == after:
				case s == before && !slices.Contains(snaps[:i], after):
				default:
					t.Errorf("rescan %d of %d saw %s, want the old files (%s) before the new ones (%s)", i+1, len(snaps), s, before, after)
				}
			}
			if last := snaps[len(snaps)-1]; last != after {
				t.Errorf("the last rescan saw %s, want the final files %s", last, after)
			}
		})
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
			h.w.Changed()

			// The barrier goes in the parent: events in the new directory
			// before its watch is added are lost (the notification makes
			// the daemon rescan it).
			h.expectChange(root, func() { tt.swap(t, units, next) })
			if _, all := h.w.Changed(); !all {
				t.Errorf("Changed after the units directory was swapped: not all, want all")
			}
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
	created := func(v seenEvent) bool { return v.watching }
	removed := func(v seenEvent) bool { return !v.watching }
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
		h.w.Changed()
		h.expectChange(root, func() { write(t, config, "gateway: {listen: ':2'}\n") })
		if _, all := h.w.Changed(); !all {
			t.Errorf("Changed after the config file changed: not all, want all (it holds every unit's defaults)")
		}
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

// A units directory that is a ConfigMap volume, updated as the kubelet
// updates it (testkit.ProjectVolume): the update of one unit file behind
// the ..data link is one notification, at once (the debounce is an hour
// here, so only a completed change notifies), and nothing else the
// kubelet does counts; a key added is a symlink made whole.
func TestProjectedVolume(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "units")
	testkit.ProjectVolume(t, dir, "v1", map[string]string{"web.yaml": "command: [web]\n", "api.yaml": "command: [api]\n"})
	h := start(t, Options{Dir: dir, Debounce: time.Hour})
	h.w.Changed()

	vs := h.step(dir, func() {
		testkit.ProjectVolume(t, dir, "v2", map[string]string{"web.yaml": "command: [web, --v2]\n", "api.yaml": "command: [api]\n"})
	})
	var counted []string
	for _, v := range vs {
		if v.relevant {
			counted = append(counted, fmt.Sprintf("%s %s %s", filepath.Base(v.name), v.op, v.verdict))
		}
	}
	if want := []string{ProjectedData + " " + opMovedTo.String() + " complete"}; !slices.Equal(counted, want) {
		t.Errorf("counted %q, want %q; events: %v", counted, want, vs)
	}
	if _, all := h.w.Changed(); !all {
		t.Errorf("Changed after ..data was swapped: not all, want all (its files had no event of their own)")
	}
	h.awaitChange()
	if _, ok := testkit.Ready(h.w.Changes()); ok {
		t.Error("a second notification is pending, want the update to be one")
	}
	if got, err := os.ReadFile(filepath.Join(dir, "web.yaml")); err != nil || string(got) != "command: [web, --v2]\n" {
		t.Errorf("web.yaml through ..data reads %q, %v; want v2", got, err)
	}

	// A key added: its link is made after the swap, and is complete in
	// itself (the reload it causes sees db.yaml; no hour waited).
	h.drain()
	vs = h.step(dir, func() {
		testkit.ProjectVolume(t, dir, "v3", map[string]string{"web.yaml": "command: [web, --v2]\n", "api.yaml": "command: [api]\n", "db.yaml": "command: [db]\n"})
	})
	if !slices.ContainsFunc(vs, func(v seenEvent) bool {
		return filepath.Base(v.name) == "db.yaml" && v.op.has(opCreate) && v.verdict == verdictComplete
	}) {
		t.Errorf("the new key's link did not complete a change; events: %v", vs)
	}
	h.awaitChange()
}

// String names a verdict in the tests' messages.
func (v verdict) String() string {
	return [...]string{"none", "quiet", "complete"}[v]
}
