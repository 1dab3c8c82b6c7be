package reconciler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/logfile"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/units"
)

// TestOutputStamped: an owned unit's stdout and stderr reach its log
// through hermesd, each line a record with the time it was read and its
// stream, whatever the program prints; a survivor (persist_on_release)
// writes its log file directly, lines as printed. A log readiness probe
// matches the text the program printed, not the record around it.
func TestOutputStamped(t *testing.T) {
	before := time.Now()
	l := startLiveWith(t, liveOptions{stamp: true}, map[string]string{
		"web.yaml": "shell: 'echo to stdout; echo to stderr >&2; exec sleep 300'\nready: {log: '^to stderr$'}\n",
	})
	l.waitFor("web ready", func(m map[string]control.Unit) bool {
		return running("web")(m) && m["web"].Ready
	})
	read := func(name string, n int) []string {
		t.Helper()
		var lines []string
		testkit.EventuallyOK(t, 10*time.Second, func() error {
			b, err := os.ReadFile(filepath.Join(l.state, "logs", name+".log"))
			if err != nil {
				return err
			}
			lines = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			if len(b) == 0 || len(lines) < n {
				return fmt.Errorf("%s.log has %q, want %d lines", name, b, n)
			}
			return nil
		})
		return lines
	}
	got := map[logfile.Stream]logfile.Record{}
	for _, line := range read("web", 2) {
		r := logfile.ParseRecord(line)
		if !r.Stamped() {
			t.Errorf("web.log line %q: not a record, want hermesd's time and stream before the text", line)
			continue
		}
		if r.Time.Before(before.Add(-time.Second)) || r.Time.After(time.Now().Add(time.Second)) {
			t.Errorf("web.log line %q: time %v, want when it was read (after %v)", line, r.Time, before)
		}
		got[r.Stream] = r
	}
	if got[logfile.Stdout].Text != "to stdout" || got[logfile.Stderr].Text != "to stderr" {
		t.Errorf("web.log records %+v, want \"to stdout\" on stdout and \"to stderr\" on stderr", got)
	}
}

// TestSurvivorWritesItsLog: a survivor's stdout and stderr are its log
// file itself, never a pipe into hermesd (whose death would break it); an
// owned unit's are pipes.
func TestSurvivorWritesItsLog(t *testing.T) {
	r := &Reconciler{opt: Options{Role: units.RoleGateway, StampOutput: true}}
	f, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, o := range []units.Ownership{units.PersistOnRelease, units.Adoptable} {
		out, err := r.logOutput(&unit{spec: &units.Spec{Name: "keep", Ownership: o}}, f, f.Name())
		if err != nil || out.stdout != f || out.stderr != f || out.copying != nil {
			t.Errorf("%s: output %+v, %v; want the log file itself", o, out, err)
		}
	}
	r.base = t.Context()
	out, err := r.logOutput(&unit{spec: &units.Spec{Name: "web", Ownership: units.Owned}}, f, f.Name())
	if err != nil {
		t.Fatal(err)
	}
	out.started()
	r.wg.Wait()
	if out.stdout == f || out.stderr == f {
		t.Errorf("owned: output %+v, want pipes", out)
	}
}

// testRelay is a relay in the test's process (RelayFunc): it copies the
// pipes into the log file with its own descriptors, counting the records
// it wrote, until both pipes end.
type testRelay struct {
	t       *testing.T
	wrote   atomic.Int64
	done    chan struct{}
	started atomic.Bool
}

func (tr *testRelay) relay(ctx context.Context, unit string, stdout, stderr, log *os.File) error {
	var fs [3]*os.File
	for i, f := range []*os.File{stdout, stderr, log} {
		d, err := dupFile(f)
		if err != nil {
			return err
		}
		fs[i] = d
	}
	tr.started.Store(true)
	go func() {
		defer close(tr.done)
		defer fs[2].Close()
		var wg sync.WaitGroup
		for i, s := range []logfile.Stream{logfile.Stdout, logfile.Stderr} {
			wg.Go(func() {
				defer fs[i].Close()
				if err := logfile.Copy(context.WithoutCancel(ctx), countWriter{fs[2], &tr.wrote}, fs[i], s, nil); err != nil {
					tr.t.Errorf("the relay's copy of %s: %v", s, err)
				}
			})
		}
		wg.Wait()
	}()
	return nil
}

// dupFile is a copy of f that is closed apart from it; f stays in the
// mode it is in (Fd would make a pipe blocking).
func dupFile(f *os.File) (*os.File, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var dup *os.File
	var derr error
	if err := rc.Control(func(fd uintptr) {
		nfd, err := unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			derr = err
			return
		}
		dup = os.NewFile(uintptr(nfd), f.Name())
	}); err != nil {
		return nil, err
	}
	return dup, derr
}

// countWriter counts the lines written through it.
type countWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countWriter) Write(b []byte) (int, error) {
	c.n.Add(int64(bytes.Count(b, []byte("\n"))))
	return c.w.Write(b)
}

// TestReleaseHandsOutputOver: the release of an owned unit whose output
// hermesd copies hands the copy over to the relay while the unit writes
// numbered lines as fast as it can, on stdout and stderr: every line is in
// the log once, in order, stamped, whether hermesd's copiers or the
// relay's wrote it, and the relay wrote on after the release. Without a
// relay the release is refused, and the unit stays owned and copied.
func TestReleaseHandsOutputOver(t *testing.T) {
	tr := &testRelay{t: t, done: make(chan struct{})}
	l := startLiveWith(t, liveOptions{stamp: true, relay: tr.relay}, map[string]string{
		"fast.yaml": "shell: 'i=0; while :; do echo \"$i\"; echo \"$i\" >&2; i=$((i+1)); done'\n",
	})
	m := l.waitFor("fast running", running("fast"))
	logPath := filepath.Join(l.state, "logs", "fast.log")
	if !testkit.Within(10*time.Second, func() bool { fi, err := os.Stat(logPath); return err == nil && fi.Size() > 10000 }) {
		t.Fatalf("fast.log does not grow")
	}
	res, err := l.r.Release(t.Context(), "fast")
	if err != nil {
		t.Fatal(err)
	}
	if res.PGID <= 1 || res.PGID != m["fast"].PGID {
		t.Fatalf("release: %+v, want the group %d", res, m["fast"].PGID)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			syscall.Kill(-res.PGID, syscall.SIGKILL)
		}
	})
	if !tr.started.Load() {
		t.Fatal("the release did not start the relay")
	}
	if !testkit.Within(10*time.Second, func() bool { return tr.wrote.Load() > 1000 }) {
		t.Fatalf("the relay wrote %d lines after the release, want it to write on", tr.wrote.Load())
	}
	syscall.Kill(-res.PGID, syscall.SIGKILL)
	killed = true
	testkit.Receive(t, 20*time.Second, tr.done, "the relay still reads 20s after the group was killed: it must end at its pipes' EOF")
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	next := testkit.CheckNumbered(t, b, func(line string) (logfile.Stream, string, bool, bool) {
		r := logfile.ParseRecord(line)
		return r.Stream, r.Text, r.Partial, r.Stamped()
	})
	if next[logfile.Stdout] < 500 || next[logfile.Stderr] < 500 {
		t.Errorf("lines: %v, want over 500 on each stream", next)
	}
}

// TestReleaseWithoutRelay: without a relay, the release of a unit whose
// output hermesd copies is refused; with a relay that fails to start, it
// fails with the relay's error. Either way the unit runs on, owned, and
// its output is copied on (the copiers resume after a failed handover).
func TestReleaseWithoutRelay(t *testing.T) {
	errRelay := errors.New("no relay today")
	for _, tc := range []struct {
		name  string
		relay RelayFunc
		want  error
	}{
		{"none", nil, control.ErrRefused},
		{"failing", func(context.Context, string, *os.File, *os.File, *os.File) error { return errRelay }, errRelay},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := startLiveWith(t, liveOptions{stamp: true, relay: tc.relay}, map[string]string{
				"web.yaml": "shell: 'while :; do echo tick; sleep 0.05; done'\n",
			})
			m := l.waitFor("web running", running("web"))
			if _, err := l.r.Release(t.Context(), "web"); !errors.Is(err, tc.want) {
				t.Fatalf("release: %v, want %v", err, tc.want)
			}
			refused := time.Now()
			if u := l.waitFor("web running", running("web"))["web"]; u.PID != m["web"].PID {
				t.Fatalf("web after the failed release: %+v, want pid %d running", u, m["web"].PID)
			}
			logPath := filepath.Join(l.state, "logs", "web.log")
			testkit.EventuallyOK(t, 10*time.Second, func() error {
				b, _ := os.ReadFile(logPath)
				for line := range strings.Lines(string(b)) {
					if r := logfile.ParseRecord(strings.TrimSuffix(line, "\n")); r.Stamped() && r.Time.After(refused) {
						return nil
					}
				}
				return fmt.Errorf("web.log holds no record read after the failed release: %q", b)
			})
		})
	}
}
