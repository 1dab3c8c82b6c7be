package logfile

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"go.uber.org/goleak"
)

// The test binary is its own helper process: with HERMES_LOGFILE_HELPER set
// it echoes each line of stdin to stdout (its log file) and then
// acknowledges on fd 3, so the test knows the line is in the file.
func TestMain(m *testing.M) {
	if os.Getenv("HERMES_LOGFILE_HELPER") == "flood" {
		flood()
	}
	if os.Getenv("HERMES_LOGFILE_HELPER") == "echo" {
		ack := os.NewFile(3, "ack")
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			fmt.Println(sc.Text())
			fmt.Fprintln(ack, "ok")
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// patience bounds every wait on an event; it is never slept.
const patience = 20 * time.Second

func TestOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "logs")
	path := filepath.Join(dir, "web.log")
	for i, line := range []string{"one\n", "two\n"} {
		f, err := Open(path)
		if err != nil {
			t.Fatalf("Open #%d: %v", i, err)
		}
		if _, err := f.WriteString(line); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if got := read(t, path); got != "one\ntwo\n" {
		t.Errorf("content = %q, want both writes appended", got)
	}
	testkit.Perms(t, map[string]os.FileMode{dir: 0o700, path: 0o600})
}

func TestRotate(t *testing.T) {
	tests := []struct {
		name    string
		before  map[string]string // suffix ("" for the log itself) → content
		maxSize int64
		keep    int
		rotated bool
		after   map[string]string // suffix → content; "-" means absent
	}{
		{
			name:    "below the limit",
			before:  map[string]string{"": "small\n"},
			maxSize: 100, keep: 3,
			after: map[string]string{"": "small\n", ".1": "-"},
		},
		{
			name:    "at the limit",
			before:  map[string]string{"": "12345\n"},
			maxSize: 6, keep: 3,
			after: map[string]string{"": "12345\n", ".1": "-"},
		},
		{
			name:    "first rotation",
			before:  map[string]string{"": "current\n"},
			maxSize: 7, keep: 3, rotated: true,
			after: map[string]string{"": "", ".1": "urrent\n", ".2": "-"},
		},
		{
			name:    "shift and drop the oldest",
			before:  map[string]string{"": "current\n", ".1": "one\n", ".2": "two\n", ".3": "three\n"},
			maxSize: 7, keep: 3, rotated: true,
			after: map[string]string{"": "", ".1": "urrent\n", ".2": "one\n", ".3": "two\n", ".4": "-"},
		},
		{
			name:    "gap in the history",
			before:  map[string]string{"": "current\n", ".2": "two\n"},
			maxSize: 7, keep: 3, rotated: true,
			after: map[string]string{"": "", ".1": "urrent\n", ".2": "-", ".3": "two\n"},
		},
		{
			name:    "keep one",
			before:  map[string]string{"": "current\n", ".1": "one\n"},
			maxSize: 7, keep: 1, rotated: true,
			after: map[string]string{"": "", ".1": "urrent\n", ".2": "-"},
		},
		{
			name:    "copies only the last max_size bytes",
			before:  map[string]string{"": "old old old\nnew\n"},
			maxSize: 4, keep: 1, rotated: true,
			after: map[string]string{"": "", ".1": "new\n"},
		},
		{
			name:    "keep zero truncates only",
			before:  map[string]string{"": "current\n"},
			maxSize: 1, keep: 0, rotated: true,
			after: map[string]string{"": "", ".1": "-"},
		},
		{
			name:    "a link at a numbered name is replaced, not followed",
			before:  map[string]string{"": "current\n", ".1": "@victim"},
			maxSize: 7, keep: 1, rotated: true,
			after: map[string]string{"": "", ".1": "urrent\n", "victim": "untouched\n"},
		},
		{
			name:   "missing log",
			before: map[string]string{}, maxSize: 1, keep: 3,
			after: map[string]string{"": "-", ".1": "-"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "u.log")
			for suffix, content := range tt.before {
				if target, ok := strings.CutPrefix(content, "@"); ok {
					if err := os.WriteFile(path+target, []byte("untouched\n"), 0o600); err != nil {
						t.Fatal(err)
					}
					if err := os.Symlink(path+target, path+suffix); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := os.WriteFile(path+suffix, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			rotated, err := Rotate(path, tt.maxSize, tt.keep)
			if err != nil {
				t.Fatalf("Rotate: %v", err)
			}
			if rotated != tt.rotated {
				t.Errorf("Rotate = %v, want %v", rotated, tt.rotated)
			}
			for suffix, want := range tt.after {
				got, err := os.ReadFile(path + suffix)
				if os.IsNotExist(err) {
					if want != "-" {
						t.Errorf("%s missing, want %q", "u.log"+suffix, want)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != want {
					t.Errorf("%s = %q, want %q", "u.log"+suffix, got, want)
				}
			}
			entries, _ := os.ReadDir(filepath.Dir(path))
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), ".tmp") {
					t.Errorf("temporary file %s left behind", e.Name())
				}
				if fi, _ := e.Info(); fi.Mode().Perm() != 0o600 {
					t.Errorf("mode of %s = %v, want 0600", e.Name(), fi.Mode().Perm())
				}
			}
		})
	}
}

func TestRotateNegativeKeep(t *testing.T) {
	path := filepath.Join(t.TempDir(), "u.log")
	os.WriteFile(path, []byte("x\n"), 0o600)
	if _, err := Rotate(path, 0, -1); err == nil {
		t.Error("Rotate with keep -1 succeeded, want an error")
	}
}

// A real process that keeps its descriptor across a rotation goes on writing
// into the same, truncated file, from its start.
func TestRotateLiveWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "worker.log")
	logf, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ackR, ackW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	// GORACE: a race-enabled helper otherwise sleeps 1s at exit.
	cmd.Env = append(os.Environ(), "HERMES_LOGFILE_HELPER=echo", "GORACE=atexit_sleep_ms=0")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{ackW}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logf.Close()
	ackW.Close()
	defer ackR.Close()
	acks := bufio.NewScanner(ackR)
	say := func(line string) {
		t.Helper()
		if _, err := fmt.Fprintln(stdin, line); err != nil {
			t.Fatal(err)
		}
		if !acks.Scan() {
			t.Fatalf("helper did not acknowledge %q: %v", line, acks.Err())
		}
	}

	say("before rotation 1")
	say("before rotation 2")
	rotated, err := Rotate(path, 18, 2) // keeps the last 18 bytes: the second line
	if err != nil || !rotated {
		t.Fatalf("Rotate = %v, %v; want true, nil", rotated, err)
	}
	say("after rotation")

	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	if got, want := read(t, path), "after rotation\n"; got != want {
		t.Errorf("log after rotation = %q, want %q (new lines at the start of the truncated file)", got, want)
	}
	if got, want := read(t, path+".1"), "before rotation 2\n"; got != want {
		t.Errorf("rotated log = %q, want %q", got, want)
	}
}

func TestTail(t *testing.T) {
	long := strings.Repeat("x", 40<<10) // longer than one read chunk
	tests := []struct {
		name    string
		content string
		n       int
		want    string
	}{
		{"last two", "a\nb\nc\n", 2, "b\nc\n"},
		{"last one", "a\nb\nc\n", 1, "c\n"},
		{"zero", "a\nb\nc\n", 0, ""},
		{"all", "a\nb\nc\n", -1, "a\nb\nc\n"},
		{"more than there are", "a\nb\n", 10, "a\nb\n"},
		{"exactly all", "a\nb\n", 2, "a\nb\n"},
		{"no final newline", "a\nb\nc", 2, "b\nc"},
		{"empty lines count", "a\n\n\n", 2, "\n\n"},
		{"empty file", "", 3, ""},
		{"lines across chunks", "first\n" + long + "\nlast\n", 2, long + "\nlast\n"},
		{"many lines", strings.Repeat("line\n", 10000) + "end\n", 3, "line\nline\nend\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "u.log")
			os.WriteFile(path, []byte(tt.content), 0o600)
			var out bytes.Buffer
			if err := Tail(t.Context(), path, tt.n, false, &out); err != nil {
				t.Fatalf("Tail: %v", err)
			}
			if got := out.String(); got != tt.want {
				t.Errorf("Tail(%d) = %q, want %q", tt.n, abbrev(got), abbrev(tt.want))
			}
		})
	}
}

func TestTailMissing(t *testing.T) {
	err := Tail(t.Context(), filepath.Join(t.TempDir(), "none.log"), 10, false, io.Discard)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Tail of a missing file: %v, want an error wrapping fs.ErrNotExist", err)
	}
}

// TestFollow runs the same story through Tail -f and through the polling
// fallback used where inotify is unavailable.
func TestFollow(t *testing.T) {
	modes := []struct {
		name  string
		start func(ctx context.Context, path string, w io.Writer) error
	}{
		{"inotify", func(ctx context.Context, path string, w io.Writer) error {
			return Tail(ctx, path, 2, true, w)
		}},
		{"polling", func(ctx context.Context, path string, w io.Writer) error {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			fi, _ := f.Stat()
			off, _ := LastLinesOffset(f, fi.Size(), 2)
			fl := &follower{path: path, f: f, off: off, poll: time.Millisecond}
			return fl.run(ctx, func(b []byte) error { _, err := w.Write(b); return err })
		}},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "u.log")
			os.WriteFile(path, []byte("old 1\nold 2\nold 3\n"), 0o600)
			out := newCollector()
			ctx, cancel := context.WithCancel(t.Context())
			errc := make(chan error, 1)
			go func() { errc <- m.start(ctx, path, out) }()

			out.await(t, "old 2\nold 3\n")
			appendTo(t, path, "new 4\n")
			out.await(t, "old 2\nold 3\nnew 4\n")

			// Rotation: the file shrinks, reading restarts at 0.
			if _, err := Rotate(path, 1, 1); err != nil {
				t.Fatal(err)
			}
			appendTo(t, path, "r\n")
			out.await(t, "old 2\nold 3\nnew 4\nr\n")

			// Replacement: another file renamed onto the path.
			tmp := filepath.Join(dir, "u.log.new")
			os.WriteFile(tmp, []byte("replaced\n"), 0o600)
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
			out.await(t, "old 2\nold 3\nnew 4\nr\nreplaced\n")
			appendTo(t, path, "more\n")
			out.await(t, "old 2\nold 3\nnew 4\nr\nreplaced\nmore\n")

			cancel()
			if err := <-errc; err != nil {
				t.Errorf("follow returned %v after cancel, want nil", err)
			}
		})
	}
}

func TestLines(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "u.log")
	os.WriteFile(path, []byte("before\nstarting\n"), 0o600)
	ctx, cancel := context.WithCancel(t.Context())
	lines, err := Lines(ctx, path, int64(len("before\n")))
	if err != nil {
		t.Fatal(err)
	}
	expect := func(want string) {
		t.Helper()
		nextLine(t, lines, want)
	}
	expect("starting")
	appendTo(t, path, "listening on :8080\n")
	expect("listening on :8080")

	// A line written in two parts is delivered once, whole.
	appendTo(t, path, "half ")
	appendTo(t, path, "and half\n")
	expect("half and half")

	// After a rotation, lines come from the start of the truncated file.
	if _, err := Rotate(path, 1, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, path, "rotated\n")
	expect("rotated")

	cancel()
	for range lines {
	}
}

func TestLinesWaitsForFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "later.log")
	lines, err := Lines(t.Context(), path, 0)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("ready\n")
	f.Close()
	nextLine(t, lines, "ready")
}

func TestLinesOffsetBeyondEnd(t *testing.T) {
	// The file shrank (a rotation) between the caller's size check and
	// Lines: reading restarts at 0 rather than waiting for the old size.
	path := filepath.Join(t.TempDir(), "u.log")
	os.WriteFile(path, []byte("fresh\n"), 0o600)
	lines, err := Lines(t.Context(), path, 1000)
	if err != nil {
		t.Fatal(err)
	}
	nextLine(t, lines, "fresh")
	if _, err := Lines(t.Context(), path, -1); err == nil {
		t.Error("Lines with offset -1 succeeded, want an error")
	}
}

// collector is an io.Writer the follow tests read back, waking waiters on
// every write.
type collector struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced on every write; guarded by mu
}

func newCollector() *collector { return &collector{changed: make(chan struct{})} }

func (c *collector) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	close(c.changed)
	c.changed = make(chan struct{})
	return len(p), nil
}

func (c *collector) await(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(patience)
	for {
		c.mu.Lock()
		got, changed := c.buf.String(), c.changed
		c.mu.Unlock()
		if got == want {
			return
		}
		if !strings.HasPrefix(want, got) {
			t.Fatalf("followed output = %q, want %q", got, want)
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("followed output = %q after %v, want %q", got, patience, want)
		}
	}
}

// nextLine waits at most patience for the next line on lines, which must
// be want.
func nextLine(t *testing.T, lines <-chan string, want string) {
	t.Helper()
	select {
	case got, ok := <-lines:
		if !ok {
			t.Fatalf("channel closed, want %q", want)
		}
		if got != want {
			t.Errorf("line = %q, want %q", got, want)
		}
	case <-time.After(patience):
		t.Fatalf("no line within %v, want %q", patience, want)
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func abbrev(s string) string {
	if len(s) > 60 {
		return fmt.Sprintf("%s…(%d bytes)…%s", s[:20], len(s), s[len(s)-20:])
	}
	return s
}

// The log directory removed and created again (a state directory wiped):
// following goes on, by polling once the directory watch is gone.
func TestFollowDirectoryRecreated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	path := filepath.Join(dir, "u.log")
	appendTo(t, path, "first\n")
	out := newCollector()
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- Tail(ctx, path, -1, true, out) }()
	out.await(t, "first\n")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	appendTo(t, path, "second\n")
	out.await(t, "first\nsecond\n")
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("Tail returned %v after cancel, want nil", err)
	}
}
