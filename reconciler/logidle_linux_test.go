package reconciler

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/logfile"
	"github.com/hermes-units/hermes/internal/testkit"
)

// The tests of the log files copiers write (logSink): a unit whose output
// hermesd copies holds its log open only while it writes. Each unit here
// prints "hello", then copies what the test writes into its fifo to its
// stdout (cat holds the fifo open for reading and writing, so it never
// sees its end): output on demand, and none while the test writes none.

// fifoUnits declares a unit for each name that prints hello, then what
// its fifo in dir brings, and returns the unit files.
func fifoUnits(t *testing.T, dir string, extra string, names ...string) map[string]string {
	t.Helper()
	files := map[string]string{}
	for _, n := range names {
		fifo := filepath.Join(dir, n+".fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		files[n+".yaml"] = fmt.Sprintf("shell: 'echo hello; exec cat <> %s'\n%s", fifo, extra)
	}
	return files
}

// say writes s into unit's fifo in dir (fifoUnits).
func say(t *testing.T, dir, unit, s string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, unit+".fifo"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// logFDs counts the descriptors of this process open on a file under
// dir.
func logFDs(t *testing.T, dir string) int {
	t.Helper()
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if to, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(to, dir+"/") {
			n++
		}
	}
	return n
}

// waitClosed waits until this process holds no log file under l's log
// directory open.
func waitClosed(t *testing.T, l *live) {
	t.Helper()
	dir := filepath.Join(l.state, "logs")
	testkit.EventuallyOK(t, 20*time.Second, func() error {
		if n := logFDs(t, dir); n > 0 {
			return fmt.Errorf("%d descriptors still open on logs under %s, want none once the units are idle", n, dir)
		}
		return nil
	})
}

// waitRecord waits until the log at path holds a stamped stdout record
// of text.
func waitRecord(t *testing.T, path, text string) {
	t.Helper()
	testkit.EventuallyOK(t, 20*time.Second, func() error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for line := range strings.Lines(string(b)) {
			if r := logfile.ParseRecord(strings.TrimSuffix(line, "\n")); r.Stamped() && r.Stream == logfile.Stdout && r.Text == text {
				return nil
			}
		}
		return fmt.Errorf("%s holds no stdout record %q: %q", path, text, b)
	})
}

// TestIdleLogsClosed: once idle, units whose output hermesd copies hold
// no descriptor of their log files (it would be one more per unit, which
// thousands of units cannot afford under the descriptor limit), and a
// line a unit prints later still lands in its log as a stamped record;
// the log is closed again once idle.
func TestIdleLogsClosed(t *testing.T) {
	fifos := t.TempDir()
	var names []string
	for i := range 20 {
		names = append(names, fmt.Sprintf("u%02d", i))
	}
	l := startLiveWith(t, liveOptions{stamp: true, logIdle: 200 * time.Millisecond}, fifoUnits(t, fifos, "", names...))
	l.waitFor("all running", running(names...))
	logs := filepath.Join(l.state, "logs")
	for _, n := range names {
		waitRecord(t, filepath.Join(logs, n+".log"), "hello")
	}
	waitClosed(t, l)
	say(t, fifos, "u07", "later\n")
	waitRecord(t, filepath.Join(logs, "u07.log"), "later")
	waitClosed(t, l)
}

// TestOpenLogsCapped: however many units print, their copiers hold at
// most MaxOpenLogs (here 3) log files open at once, the one opened first
// closed for the next; every line still lands in its unit's log.
func TestOpenLogsCapped(t *testing.T) {
	fifos := t.TempDir()
	var names []string
	for i := range 8 {
		names = append(names, fmt.Sprintf("u%d", i))
	}
	l := startLiveWith(t, liveOptions{stamp: true, logIdle: time.Hour, logMax: 3}, fifoUnits(t, fifos, "", names...))
	l.waitFor("all running", running(names...))
	logs := filepath.Join(l.state, "logs")
	check := func() {
		t.Helper()
		if n := logFDs(t, logs); n > 3 {
			t.Fatalf("%d log files open, want at most 3", n)
		}
	}
	for _, n := range names {
		waitRecord(t, filepath.Join(logs, n+".log"), "hello")
		check()
	}
	for round := range 3 {
		for _, n := range names {
			say(t, fifos, n, fmt.Sprintf("round %d\n", round))
		}
		for _, n := range names {
			waitRecord(t, filepath.Join(logs, n+".log"), fmt.Sprintf("round %d", round))
			check()
		}
	}
}

// TestIdleLogRotation: a log rotated (logfile.Logs, in place) while its
// unit was idle gets the unit's next line in the file at its path; a log
// removed while idle is made anew by the next line, and kept within its
// max_size from then on too (it is watched again).
func TestIdleLogRotation(t *testing.T) {
	fifos := t.TempDir()
	var lines testkit.Lines
	logs := logfile.NewLogs(func(path string, err error) { lines.Logf("%s: %v", path, err) })
	stop := testkit.Run(t, logs.Run)
	defer stop()
	l := startLiveWith(t, liveOptions{stamp: true, logIdle: 200 * time.Millisecond, logs: logs},
		fifoUnits(t, fifos, "log: {max_size: 4KiB, keep: 1}\n", "big"))
	l.waitFor("big running", running("big"))
	path := filepath.Join(l.state, "logs", "big.log")
	waitRecord(t, path, "hello")
	burst := func(tag string) string {
		var b strings.Builder
		for i := range 200 {
			fmt.Fprintf(&b, "%s %04d\n", tag, i)
		}
		say(t, fifos, "big", b.String())
		return fmt.Sprintf("%s %04d", tag, 199)
	}
	rotatedWith := func(text string) {
		t.Helper()
		testkit.EventuallyOK(t, 20*time.Second, func() error {
			b, err := os.ReadFile(path + ".1")
			if err != nil {
				return err
			}
			if !strings.Contains(string(b), text) {
				cur, _ := os.ReadFile(path)
				return fmt.Errorf("%s.1 does not hold %q yet; %s holds %d bytes: %.300q", path, text, path, len(cur), cur)
			}
			return nil
		})
	}
	rotatedWith(burst("first"))
	waitClosed(t, l)
	say(t, fifos, "big", "after rotation\n")
	waitRecord(t, path, "after rotation")

	waitClosed(t, l)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	say(t, fifos, "big", "in a new file\n")
	waitRecord(t, path, "in a new file")
	rotatedWith(burst("second"))
	if got := lines.All(); len(got) > 0 {
		t.Errorf("rotation reported %q, want nothing", got)
	}
}

// TestHandOverAfterIdleClose: the release of a unit whose copiers had
// closed its idle log opens it again for the relay, which writes the
// unit's later lines into it.
func TestHandOverAfterIdleClose(t *testing.T) {
	fifos := t.TempDir()
	tr := &testRelay{t: t, done: make(chan struct{})}
	l := startLiveWith(t, liveOptions{stamp: true, relay: tr.relay, logIdle: 200 * time.Millisecond}, fifoUnits(t, fifos, "", "web"))
	l.waitFor("web running", running("web"))
	path := filepath.Join(l.state, "logs", "web.log")
	waitRecord(t, path, "hello")
	waitClosed(t, l)
	res, err := l.r.Release(t.Context(), "web")
	if err != nil {
		t.Fatal(err)
	}
	if res.PGID <= 1 {
		t.Fatalf("release: %+v, want the unit's group", res)
	}
	killed := false
	defer func() {
		if !killed {
			syscall.Kill(-res.PGID, syscall.SIGKILL)
		}
	}()
	say(t, fifos, "web", "after the release\n")
	waitRecord(t, path, "after the release")
	if n := tr.wrote.Load(); n != 1 {
		t.Errorf("the relay wrote %d records, want the 1 printed after the release", n)
	}
	syscall.Kill(-res.PGID, syscall.SIGKILL)
	killed = true
	testkit.Receive(t, 20*time.Second, tr.done, "the relay still reads 20s after the group was killed")
}

// TestIdleLogRefusesLink: a log path replaced by a symbolic link while
// its unit was idle is refused when the unit next prints, as a start
// refuses it: nothing is written through the link, and the loss is
// reported (once); a regular file at the path takes the lines again.
func TestIdleLogRefusesLink(t *testing.T) {
	fifos := t.TempDir()
	var lines testkit.Lines
	logger := slog.New(slog.NewTextHandler(linesWriter{&lines}, nil))
	l := startLiveWith(t, liveOptions{stamp: true, logIdle: 200 * time.Millisecond, logger: logger}, fifoUnits(t, fifos, "", "web"))
	l.waitFor("web running", running("web"))
	path := filepath.Join(l.state, "logs", "web.log")
	waitRecord(t, path, "hello")
	waitClosed(t, l)
	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(elsewhere, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path, path+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, path); err != nil {
		t.Fatal(err)
	}
	say(t, fifos, "web", "through the link\n")
	const lost = "unit output lost: the log file could not be opened"
	testkit.Eventually(t, 20*time.Second, "the refused log reported", func() bool { return len(lines.Matching(lost)) > 0 })
	say(t, fifos, "web", "through the link again\n")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	say(t, fifos, "web", "in a new file\n")
	waitRecord(t, path, "in a new file")
	if b, _ := os.ReadFile(elsewhere); len(b) > 0 {
		t.Errorf("the link's target holds %q, want nothing written through the link", b)
	}
	if got := lines.Matching(lost); len(got) != 1 {
		t.Errorf("the loss reported %d times, want once for the spell: %q", len(got), got)
	}
}

// linesWriter adds each write (a log record) to Lines.
type linesWriter struct{ l *testkit.Lines }

func (w linesWriter) Write(b []byte) (int, error) {
	w.l.Logf("%s", b)
	return len(b), nil
}
