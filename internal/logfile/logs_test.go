package logfile

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hermes-units/hermes/internal/testkit"
)

// lineLen is the length of every line the flood helper writes.
const lineLen = 64

// flood is the helper that writes FLOOD_BYTES bytes of numbered lines to
// stdout as fast as it can, in 64 KiB writes whose errors it ignores (as a
// unit whose log is full would go on), then "END\n", and exits.
func flood() {
	total, _ := strconv.ParseInt(os.Getenv("FLOOD_BYTES"), 10, 64)
	pad := strings.Repeat("x", lineLen-11)
	var chunk []byte
	for i := int64(0); i*lineLen < total; i++ {
		chunk = fmt.Appendf(chunk, "%09d %s\n", i, pad)
		if len(chunk) >= 64<<10 {
			os.Stdout.Write(chunk)
			chunk = chunk[:0]
		}
	}
	os.Stdout.Write(append(chunk, "END\n"...))
	os.Exit(0)
}

// startHelper starts the test binary as helper mode with out as its
// stdout and stderr, and closes the test's copy of out.
func startHelper(t *testing.T, mode string, out *os.File, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), "HERMES_LOGFILE_HELPER="+mode, "GORACE=atexit_sleep_ms=0"), env...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out.Close()
	return cmd
}

// sizes returns the sizes of path and path.1 … path.(keep+1) (the last one
// must not exist), and their total.
func sizes(path string, keep int) (each []int64, total int64) {
	for i := 0; i <= keep+1; i++ {
		p := path
		if i > 0 {
			p = numbered(path, i)
		}
		var n int64
		if fi, err := os.Lstat(p); err == nil {
			n = fi.Size()
		}
		each = append(each, n)
		total += n
	}
	return each, total
}

// watchDir returns inotify events on dir for the test's life.
func watchDir(t *testing.T, dir string) *fsnotify.Watcher {
	t.Helper()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	if err := w.Add(dir); err != nil {
		t.Fatal(err)
	}
	return w
}

// waitFor waits on dir's events until cond holds, checking it first and
// after every event (and after an overflow), failing after patience.
func waitFor(t *testing.T, w *fsnotify.Watcher, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(patience)
	for !cond() {
		select {
		case <-w.Events:
		case <-w.Errors:
		case <-deadline:
			t.Fatalf("gave up after %v waiting for %s", patience, what)
		}
	}
}

// TestLogsFloodBound: a unit writing its log as fast as it can. The rotated
// files never exceed max_size and never number more than keep (at every
// moment the test looks: every inotify event on the directory); once the
// unit stops, the whole log is within max_size × (keep + 1) at once. The
// peak while it writes is the bound plus the slack, logged: what the unit
// writes while hermesd wakes up and copies (docs/security.md).
func TestLogsFloodBound(t *testing.T) {
	const maxSize, keep = 256 << 10, 2
	dir := t.TempDir()
	path := filepath.Join(dir, "flood.log")
	w := watchDir(t, dir)
	var reports []error
	var mu sync.Mutex
	l := NewLogs(func(p string, err error) { mu.Lock(); reports = append(reports, err); mu.Unlock() })
	runLogs(t, l)
	out, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	l.Watch(map[string]Limits{path: {MaxSize: maxSize, Keep: keep}})
	cmd := startHelper(t, "flood", out, "FLOOD_BYTES="+strconv.Itoa(64<<20))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var peak int64
	look := func() {
		each, total := sizes(path, keep)
		peak = max(peak, total)
		for i, n := range each[1:] {
			if n > maxSize {
				t.Fatalf("rotated file %d holds %d bytes, over max_size %d", i+1, n, maxSize)
			}
		}
		if each[keep+1] != 0 {
			t.Fatalf("a file past keep exists: %v", each)
		}
	}
	deadline := time.After(patience)
	for running := true; running; {
		look()
		select {
		case <-w.Events:
		case <-w.Errors:
		case err := <-exited:
			if err != nil {
				t.Fatalf("flood helper: %v", err)
			}
			running = false
		case <-deadline:
			t.Fatal("the flood helper did not finish")
		}
	}
	waitFor(t, w, "the log within its bound", func() bool {
		look()
		each, total := sizes(path, keep)
		return each[0] <= maxSize && total <= maxSize*(keep+1)
	})
	t.Logf("64 MiB written; peak %d bytes on disk, bound %d: slack %d", peak, maxSize*(keep+1), max(0, peak-maxSize*(keep+1)))
	mu.Lock()
	defer mu.Unlock()
	if len(reports) > 0 {
		t.Errorf("rotation reported %v", reports)
	}
}

// TestLogsDirectRotatesOnGrowth: a survivor writing its log directly is
// rotated as soon as a write crosses max_size (inotify, no timer), and keeps
// writing into the same, truncated file.
func TestLogsDirectRotatesOnGrowth(t *testing.T) {
	const maxSize, keep = 100, 1
	dir := t.TempDir()
	path := filepath.Join(dir, "survivor.log")
	l := NewLogs(nil)
	out, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	runLogs(t, l)
	l.Watch(map[string]Limits{path: {MaxSize: maxSize, Keep: keep}})
	w := watchDir(t, dir)
	line := strings.Repeat("a", 59) + "\n"
	for range 2 { // 120 bytes: crosses max_size
		if _, err := out.WriteString(line); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, w, "the rotation", func() bool {
		each, _ := sizes(path, keep)
		return each[0] == 0 && each[1] > 0
	})
	if got := read(t, numbered(path, 1)); got != strings.Repeat(line, 2)[120-maxSize:] {
		t.Errorf("rotated file = %q, want the last %d bytes", got, maxSize)
	}
	if _, err := out.WriteString("after\n"); err != nil {
		t.Fatal(err)
	}
	out.Close()
	if got := read(t, path); got != "after\n" {
		t.Errorf("log after rotation = %q, want the writer's next line at its start", got)
	}
}

// runLogs runs l until the test ends.
func runLogs(t *testing.T, l *Logs) {
	t.Helper()
	stop := testkit.Run(t, l.Run)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Logs.Run: %v", err)
		}
	})
}

// TestLogsFullDisk: on a file system with no room for a copy of max_size
// bytes, rotation drops the old content instead (and says so) and the log
// stays bounded; the unit, whose writes fail while the disk is full, is
// never held up: it runs to its end.
func TestLogsFullDisk(t *testing.T) {
	dir := tmpfs(t, 1<<20)
	path := filepath.Join(dir, "u.log")
	var mu sync.Mutex
	var reports []error
	l := NewLogs(func(p string, err error) { mu.Lock(); reports = append(reports, err); mu.Unlock() })
	runLogs(t, l)
	out, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	// Past max_size the file system has less than max_size left: no copy.
	const maxSize = 512 << 10
	l.Watch(map[string]Limits{path: {MaxSize: maxSize, Keep: 1}})
	w := watchDir(t, dir)
	cmd := startHelper(t, "flood", out, "FLOOD_BYTES="+strconv.Itoa(16<<20))
	if err := cmd.Wait(); err != nil {
		t.Fatalf("flood helper: %v", err)
	}
	waitFor(t, w, "the log within its bound", func() bool {
		each, total := sizes(path, 1)
		return each[0] <= maxSize && total <= 2*maxSize
	})
	mu.Lock()
	defer mu.Unlock()
	var noRoom bool
	for _, err := range reports {
		noRoom = noRoom || errors.Is(err, ErrNoRoom)
	}
	if !noRoom {
		t.Errorf("reports %v, want one that matches ErrNoRoom", reports)
	}
}

// tmpfs mounts a tmpfs of size bytes for the test, or skips it: mounting
// needs root (CI runs as root).
func tmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	if err := testkit.MountTmpfs(t, dir, size); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (%v): needs root; TestLogsPipeBound covers rotation without a full disk", err)
	}
	return dir
}

// TestLogsWorkPerChange: Run looks at what changed, not at the whole set:
// a set of 500 logs costs 500 checks once; adding one log costs one, and
// giving the same set again none. A unit's start adds its log, so a start
// costs the same at 5000 units as at 5.
func TestLogsWorkPerChange(t *testing.T) {
	dir := t.TempDir()
	lim := Limits{MaxSize: 1 << 20, Keep: 1}
	set := map[string]Limits{}
	for i := range 500 {
		p := filepath.Join(dir, fmt.Sprintf("u%d.log", i))
		if err := os.WriteFile(p, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		set[p] = lim
	}
	l := NewLogs(nil)
	runLogs(t, l)
	checked := func(n int64) {
		t.Helper()
		testkit.Eventually(t, patience, fmt.Sprintf("%d checks", n), func() bool { return l.checks.Load() >= n })
		if got := l.checks.Load(); got != n {
			t.Fatalf("%d checks, want %d", got, n)
		}
	}
	l.Watch(set)
	checked(500)
	l.Add(filepath.Join(dir, "new.log"), lim)
	checked(501)
	set[filepath.Join(dir, "new.log")] = lim
	l.Watch(set)                                   // the same set: nothing to look at
	l.Add(filepath.Join(dir, "sentinel.log"), lim) // looked at after the Watch
	checked(502)
}

// TestLogsAddWatchesAFileBornLate: a log in the set before its file exists
// (a load names it, its unit opens it at its start) is watched once it is
// added: it is checked then, and rotated on the write that crosses its
// max_size.
func TestLogsAddWatchesAFileBornLate(t *testing.T) {
	const maxSize = 100
	dir := t.TempDir()
	path := filepath.Join(dir, "late.log")
	l := NewLogs(nil)
	runLogs(t, l)
	lim := Limits{MaxSize: maxSize, Keep: 1}
	l.Watch(map[string]Limits{path: lim})
	testkit.Eventually(t, patience, "the missing file looked at", func() bool { return l.checks.Load() >= 1 })
	out, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	l.Add(path, lim)
	testkit.Eventually(t, patience, "the added file looked at", func() bool { return l.checks.Load() >= 2 })
	w := watchDir(t, dir)
	if _, err := out.WriteString(strings.Repeat("a", 2*maxSize) + "\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, w, "the rotation", func() bool {
		each, _ := sizes(path, 1)
		return each[0] == 0 && each[1] > 0
	})
}
