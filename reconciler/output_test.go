package reconciler

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
		out, err := r.logOutput(&unit{spec: units.Spec{Name: "keep", Ownership: o}}, f)
		if err != nil || out.stdout != f || out.stderr != f || out.copy != nil {
			t.Errorf("%s: output %+v, %v; want the log file itself", o, out, err)
		}
	}
	r.base = t.Context()
	out, err := r.logOutput(&unit{spec: units.Spec{Name: "web", Ownership: units.Owned}}, f)
	if err != nil {
		t.Fatal(err)
	}
	out.started()
	r.wg.Wait()
	if out.stdout == f || out.stderr == f {
		t.Errorf("owned: output %+v, want pipes", out)
	}
}
