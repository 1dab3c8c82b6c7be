package logfile

import (
	"bufio"
	"bytes"
	"context"
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
	"golang.org/x/sys/unix"
)

// lineLen is the length of every line the flood helper writes.
const lineLen = 64

// flood is the helper that writes FLOOD_BYTES bytes of numbered lines to
// stdout as fast as it can, then "END\n", and exits.
func flood() {
	total, _ := strconv.ParseInt(os.Getenv("FLOOD_BYTES"), 10, 64)
	w := bufio.NewWriterSize(os.Stdout, 64<<10)
	pad := strings.Repeat("x", lineLen-11)
	for i := int64(0); i*lineLen < total; i++ {
		fmt.Fprintf(w, "%09d %s\n", i, pad)
	}
	w.WriteString("END\n")
	if err := w.Flush(); err != nil {
		os.Exit(1)
	}
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

// TestLogsPipeBound: an owned unit writing as fast as it can through Logs
// never makes its log take more than max_size × (keep + 1) bytes, no file
// exceeds max_size, at every moment the test looks (every inotify event on
// the directory), and what is kept is the newest output, in order.
func TestLogsPipeBound(t *testing.T) {
	const maxSize, keep = 64 << 10, 2
	dir := t.TempDir()
	path := filepath.Join(dir, "flood.log")
	w := watchDir(t, dir)
	var reports []error
	var mu sync.Mutex
	l := NewLogs(func(p string, err error) { mu.Lock(); reports = append(reports, err); mu.Unlock() })
	out, err := l.Open(path, Limits{MaxSize: maxSize, Keep: keep}, false)
	if err != nil {
		t.Fatal(err)
	}
	cmd := startHelper(t, "flood", out, "FLOOD_BYTES="+strconv.Itoa(32<<20))
	var peak int64
	waitFor(t, w, "the END line in the log", func() bool {
		each, total := sizes(path, keep)
		peak = max(peak, total)
		for i, n := range each {
			if n > maxSize {
				t.Fatalf("file %d of the log holds %d bytes, over max_size %d", i, n, maxSize)
			}
		}
		if each[keep+1] != 0 {
			t.Fatalf("a file past keep exists: %v", each)
		}
		if total > maxSize*(keep+1) {
			t.Fatalf("the log takes %d bytes, over max_size × (keep + 1) = %d", total, maxSize*(keep+1))
		}
		return carried(path)
	})
	if err := cmd.Wait(); err != nil {
		t.Fatalf("flood helper: %v", err)
	}
	t.Logf("peak %d bytes, bound %d", peak, maxSize*(keep+1))
	// The kept files hold consecutive lines, newest last, whole lines only
	// (a note replaces what was lost when hermesd fell behind).
	var all []byte
	for i := keep; i >= 0; i-- {
		p := path
		if i > 0 {
			p = numbered(path, i)
		}
		b, _ := os.ReadFile(p)
		all = append(all, b...)
	}
	prev := int64(-1)
	for _, line := range strings.Split(strings.TrimSuffix(string(all), "END\n"), "\n") {
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "--- hermesd: ") {
			prev = -1
			continue
		}
		n, err := strconv.ParseInt(line[:9], 10, 64)
		if err != nil || len(line) != lineLen-1 {
			t.Fatalf("line %q is not a whole line of the helper", line)
		}
		if prev >= 0 && n != prev+1 {
			t.Fatalf("line %d follows line %d", n, prev)
		}
		prev = n
	}
	mu.Lock()
	defer mu.Unlock()
	for _, r := range reports {
		t.Logf("reported: %v", r)
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
	out, err := l.Open(path, Limits{MaxSize: maxSize, Keep: keep}, true)
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

// carried reports whether all of the flood helper's output has been
// carried to the log at path: its END line, or the note of a loss there
// (a loaded machine may hold hermesd's writer up past stallAfter).
func carried(path string) bool {
	b, _ := os.ReadFile(path)
	if bytes.HasSuffix(b, []byte("END\n")) {
		return true
	}
	i := bytes.LastIndexByte(bytes.TrimSuffix(b, []byte("\n")), '\n')
	return bytes.HasPrefix(b[i+1:], []byte("--- hermesd: ")) && bytes.HasSuffix(b, []byte(" ---\n"))
}

// runLogs runs l until the test ends.
func runLogs(t *testing.T, l *Logs) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Logs.Run: %v", err)
		}
	})
}

// TestLogsFollowRotation: `logs -f` (Tail with follow) sees every line of a
// unit whose log hermesd rotates by rename under it.
func TestLogsFollowRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "u.log")
	l := NewLogs(nil)
	out, err := l.Open(path, Limits{MaxSize: 40, Keep: 1}, false)
	if err != nil {
		t.Fatal(err)
	}
	ackR, ackW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer ackR.Close()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "HERMES_LOGFILE_HELPER=echo", "GORACE=atexit_sleep_ms=0")
	cmd.Stdout, cmd.Stderr = out, out
	cmd.ExtraFiles = []*os.File{ackW}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out.Close()
	ackW.Close()
	acks := bufio.NewScanner(ackR)

	follow := newCollector()
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- Tail(ctx, path, -1, true, follow) }()
	var want string
	for i := range 12 { // 12 lines of 16 bytes through a 40-byte log: rotated every 2 lines
		line := fmt.Sprintf("line %02d of tail", i)
		if _, err := fmt.Fprintln(stdin, line); err != nil {
			t.Fatal(err)
		}
		if !acks.Scan() {
			t.Fatal("helper did not acknowledge")
		}
		want += line + "\n"
		follow.await(t, want)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("Tail: %v", err)
	}
	if _, err := os.Stat(numbered(path, 2)); err == nil {
		t.Error("path.2 exists with keep 1")
	}
}

// TestLogsFullDisk: on a file system with less room than the log's bound,
// rotation by rename goes on working (no copy), and when writes fail the
// unit is never blocked: it runs to its end, the loss is reported and noted
// in the log once there is room again.
func TestLogsFullDisk(t *testing.T) {
	dir := tmpfs(t, 1<<20)
	path := filepath.Join(dir, "u.log")
	var mu sync.Mutex
	var reports []string
	l := NewLogs(func(p string, err error) { mu.Lock(); reports = append(reports, err.Error()); mu.Unlock() })
	// Rotating within room: 8 MiB through a 1 MiB file system.
	out, err := l.Open(path, Limits{MaxSize: 256 << 10, Keep: 1}, false)
	if err != nil {
		t.Fatal(err)
	}
	w := watchDir(t, dir)
	cmd := startHelper(t, "flood", out, "FLOOD_BYTES="+strconv.Itoa(8<<20))
	waitFor(t, w, "the END line", func() bool { return carried(path) })
	if err := cmd.Wait(); err != nil {
		t.Fatalf("flood helper: %v", err)
	}
	// A bound larger than the file system: writes fail with ENOSPC.
	path2 := filepath.Join(dir, "big.log")
	out, err = l.Open(path2, Limits{MaxSize: 4 << 20, Keep: 1}, false)
	if err != nil {
		t.Fatal(err)
	}
	cmd = startHelper(t, "flood", out, "FLOOD_BYTES="+strconv.Itoa(4<<20))
	if err := cmd.Wait(); err != nil { // never blocked: it ends
		t.Fatalf("flood helper: %v", err)
	}
	waitFor(t, w, "a report of the loss", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(reports) > 0
	})
	mu.Lock()
	if !strings.Contains(strings.Join(reports, "\n"), "no space left") {
		t.Errorf("reports %q do not say the disk is full", reports)
	}
	mu.Unlock()
	// Room again: the next output starts with a note of the loss.
	must(t, os.Remove(path))
	must(t, os.Truncate(path2, 0))
	out, err = l.Open(path2, Limits{MaxSize: 4 << 20, Keep: 1}, false)
	if err != nil {
		t.Fatal(err)
	}
	cmd = startHelper(t, "flood", out, "FLOOD_BYTES=0")
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, w, "the note of the loss", func() bool {
		b, _ := os.ReadFile(path2)
		return bytes.Contains(b, []byte("bytes of output lost here: write "+path2+": no space left on device ---\n")) &&
			bytes.HasSuffix(b, []byte("END\n"))
	})
}

// tmpfs mounts a tmpfs of size bytes for the test, or skips it: mounting
// needs root (CI runs as root).
func tmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size="+strconv.Itoa(size)+",mode=0700"); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (%v): needs root; TestLogsPipeBound covers rotation without a full disk", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Error(err)
		}
	})
	return dir
}
