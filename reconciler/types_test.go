package reconciler

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/units"
)

// TestOneshotBeforeApp: an after: dependent of a oneshot starts only once
// the oneshot exited 0 (not while it runs), and the oneshot shows done.
func TestOneshotBeforeApp(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	l := startLive(t, map[string]string{
		// The step blocks until the test writes to the fifo.
		"migrate.yaml": "type: oneshot\nrestart: \"no\"\nshell: 'read x < \"$GO\"; echo migrated'\nenv: {GO: " + fifo + "}\n",
		"app.yaml":     unitYAML("sleep", "after: [migrate]\n"),
	})
	l.waitFor("migrate running, app waiting for it", func(m map[string]control.Unit) bool {
		return m["migrate"].State == "starting" && m["migrate"].PID != 0 &&
			m["app"].PID == 0 && m["app"].Error == "waiting for migrate to be done (exit 0)"
	})
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("go\n")
	f.Close()
	m := l.waitFor("migrate done, then app running", func(m map[string]control.Unit) bool {
		return m["migrate"].State == "done" && running("app")(m)
	})
	if m["migrate"].Error != "" || m["migrate"].PID != 0 {
		t.Errorf("migrate: got error %q pid %d, want none once done", m["migrate"].Error, m["migrate"].PID)
	}
	// remain_after_exit is not set: a start runs the step again.
	if err := l.r.Start(t.Context(), "migrate"); err != nil {
		t.Fatal(err)
	}
	l.waitFor("migrate running again", func(m map[string]control.Unit) bool {
		return m["migrate"].State == "starting" && m["migrate"].PID != 0 && running("app")(m)
	})
}

// TestOneshotFailureHoldsDependents: a oneshot that exits non-zero is
// failed, and its after: dependents wait, saying why.
func TestOneshotFailureHoldsDependents(t *testing.T) {
	l := startLive(t, map[string]string{
		"migrate.yaml": "type: oneshot\nrestart: \"no\"\nshell: 'echo no database; exit 1'\n",
		"app.yaml":     unitYAML("sleep", "after: [migrate]\n"),
	})
	m := l.waitFor("migrate failed", func(m map[string]control.Unit) bool {
		return m["migrate"].State == "failed" && m["app"].Error != "" && strings.Contains(m["app"].Error, "which failed")
	})
	if got, want := m["app"].Error, "waiting for migrate, which failed: exit status 1"; got != want {
		t.Errorf("app: got error %q, want %q", got, want)
	}
	if m["app"].PID != 0 || m["app"].State != "starting" {
		t.Errorf("app: got state %s pid %d, want waiting (starting, no pid)", m["app"].State, m["app"].PID)
	}
}

// TestOneshotRemainAfterExit: with remain_after_exit, a done oneshot counts
// as active: start does not run it again; a required-by dependent keeps
// running while it is done, and stops when it is stopped.
func TestOneshotRemainAfterExit(t *testing.T) {
	l := startLive(t, map[string]string{
		"setup.yaml": "type: oneshot\nremain_after_exit: true\nshell: 'echo set up'\n",
		"app.yaml":   unitYAML("sleep", "after: [setup]\nrequires: [setup]\n"),
	})
	l.waitFor("setup done, app running", func(m map[string]control.Unit) bool {
		return m["setup"].State == "done" && running("app")(m)
	})
	if err := l.r.Start(t.Context(), "setup"); err != nil {
		t.Fatal(err)
	}
	st, err := l.r.Status(t.Context(), "setup", "app")
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Units[0].State + "/" + st.Units[1].State; got != "done/running" {
		t.Errorf("after start of a done remain_after_exit oneshot: got setup/app %s, want done/running", got)
	}
	if err := l.r.Stop(t.Context(), "setup"); err != nil {
		t.Fatal(err)
	}
	l.waitFor("app stopped with setup", func(m map[string]control.Unit) bool {
		return m["setup"].State == "stopped" && m["app"].PID == 0
	})
}

// TestStartOrder: the order a reload plan shows puts each unit after what
// it waits for, and says what that is per type.
func TestStartOrder(t *testing.T) {
	specs := []units.Spec{
		{Name: "app", After: []string{"migrate", "db"}, Requires: []string{"db"}},
		{Name: "worker", Requires: []string{"app"}},
		{Name: "migrate", Type: units.Oneshot, After: []string{"db"}},
		{Name: "db", Type: units.Forking},
	}
	got := StartOrder(copies(specs))
	want := []control.Step{
		{Unit: "db", Type: "forking"},
		{Unit: "migrate", Type: "oneshot", Waits: []string{"db is ready"}},
		{Unit: "app", Type: "simple", Waits: []string{"migrate is done (exit 0)", "db is ready"}},
		{Unit: "worker", Type: "simple", Waits: []string{"app is up (requires; starts alongside it)"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}
