package reconciler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/logfile"
	"github.com/hermes-units/hermes/internal/notify"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
)

// live is a Reconciler over the real supervisor, ledger, units loader and
// notify server, on a temporary units and state directory.
type live struct {
	t     *testing.T
	r     *Reconciler
	dir   string // units
	state string
}

// unitYAML is a unit that runs this test binary as helper kind.
func unitYAML(kind string, extra string) string {
	return fmt.Sprintf("command: [%q]\nenv: {%s: %s}\n%s", os.Args[0], helperEnv, kind, extra)
}

// writeUnit writes one unit file into dir (see testkit.WriteUnits).
func writeUnit(t *testing.T, dir, file, content string) {
	t.Helper()
	testkit.WriteUnits(t, dir, map[string]string{file: content})
}

// startLive writes files into a fresh units directory and runs a gateway
// reconciler over it until the test ends (then stops it cleanly).
func startLive(t *testing.T, files map[string]string) *live {
	t.Helper()
	return startLiveMode(t, "", files)
}

// startLiveMode is startLive with the supervisor in mode ("" automatic);
// the test is skipped, saying why, where cgroup mode is unavailable.
func startLiveMode(t *testing.T, mode supervisor.Mode, files map[string]string) *live {
	t.Helper()
	return startLiveWith(t, liveOptions{mode: mode}, files)
}

// liveOptions are the choices of startLiveWith.
type liveOptions struct {
	mode   supervisor.Mode // "" automatic
	notify notify.Mode     // "" the platform's default
	logger *slog.Logger    // nil: testLogger
	stamp  bool            // Options.StampOutput
	relay  RelayFunc       // Options.Relay
	// logs is Options.Logs (nil: none); the test runs it.
	logs *logfile.Logs
	// logIdle replaces how long a copied log stays open with no write
	// (0: logIdle).
	logIdle time.Duration
	// logMax replaces how many copied logs are open at most (0:
	// MaxOpenLogs).
	logMax int
}

// startLiveWith is startLive with the supervisor and the notify server in
// the modes of o.
func startLiveWith(t *testing.T, o liveOptions, files map[string]string) *live {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real processes")
	}
	base := t.TempDir()
	l := &live{t: t, dir: filepath.Join(base, "units"), state: filepath.Join(base, "state")}
	testkit.WriteUnits(t, l.dir, files)
	owner, err := supervisor.New(supervisor.Options{StateDir: l.state, Role: "gateway", Mode: o.mode})
	if err != nil && o.mode == supervisor.ModeCgroup {
		t.Skipf("cgroup mode is unavailable here (no writable cgroup v2 hierarchy: run as root or under systemd delegation); pgroup mode is tested: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	led, err := ledger.Open(l.state)
	if err != nil {
		t.Fatal(err)
	}
	self, _ := proc.Self()
	logger := o.logger
	if logger == nil {
		logger = testLogger(t)
	}
	opts := Options{
		Role: units.RoleGateway, Spawner: Supervised(owner), Load: LoadDir(&units.Loader{}, l.dir),
		Checkpoint: Ledger(led, self, units.RoleGateway), StateDir: l.state, UnitsDir: l.dir,
		Lines: logfile.Lines, OpenLog: logfile.Open, Logger: logger, StampOutput: o.stamp,
		Relay: o.relay,
	}
	if o.logs != nil {
		opts.Logs = o.logs
	}
	serveNotify := listenNotify(t, o.notify, base, &opts)
	r, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if o.logIdle > 0 {
		r.logs.idle = o.logIdle
	}
	if o.logMax > 0 {
		r.logs.max = o.logMax
	}
	l.r = r
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	runDone, nsDone := make(chan error, 1), make(chan error, 1)
	go func() { nsDone <- serveNotify(ctx, r) }()
	go func() { runDone <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-runDone; err != nil {
			t.Errorf("Run: %v", err)
		}
		<-nsDone
		owner.Close()
	})
	return l
}

// listenNotify opens the notify server of mode under base, sets it in
// opts, and returns the function that serves it to r until ctx ends.
func listenNotify(t *testing.T, mode notify.Mode, base string, opts *Options) func(context.Context, *Reconciler) error {
	t.Helper()
	mode, err := notify.ParseMode(string(mode))
	if err != nil {
		t.Fatal(err)
	}
	if mode == notify.ModeUnit {
		ns, err := notify.ListenDir(filepath.Join(base, "notify"))
		if err != nil {
			t.Fatal(err)
		}
		opts.NotifySockets = ns
		return func(ctx context.Context, r *Reconciler) error {
			return ns.Run(ctx, func(m notify.Message) { r.NotifyOn(m.Socket, m.PID, m.Fields) })
		}
	}
	nsPath := filepath.Join(base, "notify.sock")
	ns, err := notify.Listen(nsPath)
	if err != nil {
		t.Fatal(err)
	}
	opts.NotifySocket = nsPath
	return func(ctx context.Context, r *Reconciler) error {
		return ns.Run(ctx, func(m notify.Message) { r.Notify(m.PID, m.Fields) })
	}
}

// notifyModes are the notify modes this platform has: both on Linux, the
// per-unit one elsewhere.
func notifyModes() []notify.Mode {
	if def, _ := notify.ParseMode(""); def == notify.ModeUnit {
		return []notify.Mode{notify.ModeUnit}
	}
	return []notify.Mode{notify.ModeShared, notify.ModeUnit}
}

// waitFor polls Status until cond holds (state changes have no event a
// client can wait on); it fails the test after 15 s.
func (l *live) waitFor(what string, cond func(map[string]control.Unit) bool) map[string]control.Unit {
	l.t.Helper()
	var m map[string]control.Unit
	testkit.EventuallyOK(l.t, 15*time.Second, func() error {
		st, err := l.r.Status(l.t.Context())
		if err != nil {
			l.t.Fatal(err)
		}
		m = map[string]control.Unit{}
		for _, u := range st.Units {
			m[u.Name] = u
		}
		if cond(m) {
			return nil
		}
		return fmt.Errorf("still waiting for %s; units: %+v", what, st.Units)
	})
	return m
}

func running(names ...string) func(map[string]control.Unit) bool {
	return func(m map[string]control.Unit) bool {
		for _, n := range names {
			if u, ok := m[n]; !ok || u.State != "running" || u.PID == 0 {
				return false
			}
		}
		return true
	}
}

func TestHotReload(t *testing.T) {
	l := startLive(t, map[string]string{
		"a.yaml": unitYAML("sleep", "description: touched later\n"),
		"b.yaml": unitYAML("sleep", "restart: on-failure\n"),
		"c.yaml": unitYAML("sleep", ""),
	})
	m := l.waitFor("a, b, c running", running("a", "b", "c"))
	ids := map[string]proc.Identity{}
	for _, n := range []string{"a", "b", "c"} {
		ids[n] = testkit.Identity(t, m[n].PID)
	}
	reload := func(dry bool) control.Plan {
		t.Helper()
		p, err := l.r.Reload(t.Context(), dry)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	eq := func(got, want []string) bool { return slices.Equal(got, want) || (len(got) == 0 && len(want) == 0) }

	t.Run("touch and reformat keep the pid", func(t *testing.T) {
		now := time.Now().Add(time.Minute)
		os.Chtimes(filepath.Join(l.dir, "a.yaml"), now, now)
		writeUnit(t, l.dir, "b.yaml", fmt.Sprintf("# reformatted, keys reordered\nrestart:   on-failure\nenv:\n  %s: sleep\ncommand:\n  - %q\n", helperEnv, os.Args[0]))
		p := reload(false)
		if !eq(p.Keep, []string{"a", "b", "c"}) || len(p.Restart)+len(p.Start)+len(p.Stop) != 0 {
			t.Errorf("plan %+v, want keep a, b, c only", p)
		}
		m := l.waitFor("a, b, c running", running("a", "b", "c"))
		for _, n := range []string{"a", "b"} {
			if m[n].PID != ids[n].PID || !ids[n].Alive() {
				t.Errorf("%s: pid %d, want unchanged %d", n, m[n].PID, ids[n].PID)
			}
		}
	})
	t.Run("dry run applies nothing", func(t *testing.T) {
		writeUnit(t, l.dir, "c.yaml", fmt.Sprintf("command: [%q]\nenv: {%s: sleep, EXTRA: one}\n", os.Args[0], helperEnv))
		p := reload(true)
		if !eq(p.Restart, []string{"c"}) {
			t.Errorf("dry-run plan %+v, want restart c", p)
		}
		m := l.waitFor("c running", running("c"))
		if m["c"].PID != ids["c"].PID {
			t.Errorf("dry run restarted c: pid %d, want %d", m["c"].PID, ids["c"].PID)
		}
	})
	t.Run("changed restarts", func(t *testing.T) {
		p := reload(false)
		if !eq(p.Restart, []string{"c"}) {
			t.Errorf("plan %+v, want restart c", p)
		}
		m := l.waitFor("c running with a new pid", func(m map[string]control.Unit) bool {
			return running("c")(m) && m["c"].PID != ids["c"].PID
		})
		if ids["c"].Alive() {
			t.Errorf("old c (pid %d) still alive after the restart", ids["c"].PID)
		}
		ids["c"] = testkit.Identity(t, m["c"].PID)
	})
	t.Run("invalid file keeps the last good version", func(t *testing.T) {
		writeUnit(t, l.dir, "a.yaml", unitYAML("sleep", "restrat: always\n"))
		p := reload(false)
		if !slices.Contains(p.Keep, "a") || len(p.Errors) == 0 {
			t.Errorf("plan %+v, want a kept with an error", p)
		}
		st, err := l.r.Status(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var ce control.ConfigError
		for _, e := range st.ConfigErrors {
			if filepath.Base(e.File) == "a.yaml" {
				ce = e
			}
		}
		if ce.Line != 3 || ce.Column != 1 {
			t.Errorf("config error %+v, want a.yaml:3:1", ce)
		}
		m := l.waitFor("a running", running("a"))
		if m["a"].PID != ids["a"].PID || !strings.Contains(m["a"].Error, "a.yaml:3:1") {
			t.Errorf("a: pid %d error %q, want pid %d and the file's error", m["a"].PID, m["a"].Error, ids["a"].PID)
		}
	})
	t.Run("deleted file stops its unit", func(t *testing.T) {
		os.Remove(filepath.Join(l.dir, "b.yaml"))
		p := reload(false)
		if !eq(p.Stop, []string{"b"}) {
			t.Errorf("plan %+v, want stop b", p)
		}
		l.waitFor("b gone", func(m map[string]control.Unit) bool { _, ok := m["b"]; return !ok })
		if ids["b"].Alive() {
			t.Errorf("b (pid %d) alive after its file was deleted", ids["b"].PID)
		}
	})
	t.Run("rename is a stop and a start", func(t *testing.T) {
		if err := os.Rename(filepath.Join(l.dir, "c.yaml"), filepath.Join(l.dir, "d.yaml")); err != nil {
			t.Fatal(err)
		}
		p := reload(false)
		if !eq(p.Stop, []string{"c"}) || !eq(p.Start, []string{"d"}) {
			t.Errorf("plan %+v, want stop c, start d", p)
		}
		l.waitFor("d running, c gone", func(m map[string]control.Unit) bool { _, ok := m["c"]; return !ok && running("d")(m) })
		if ids["c"].Alive() {
			t.Errorf("c (pid %d) alive after the rename", ids["c"].PID)
		}
	})
}

// TestReadiness runs in both notify modes: READY=1 of the notify unit
// reaches it on the shared socket and on its own.
func TestReadiness(t *testing.T) {
	for _, nm := range notifyModes() {
		t.Run(string(nm), func(t *testing.T) {
			tcpPort, httpPort, deadPort := testkit.FreePorts(t, 1)[0], testkit.FreePorts(t, 1)[0], testkit.FreePorts(t, 1)[0]
			l := startLiveWith(t, liveOptions{notify: nm}, map[string]string{
				"tcp.yaml":    fmt.Sprintf("command: [%q]\nenv: {%s: tcp, HELPER_ADDR: \"127.0.0.1:%d\"}\nready: {tcp: \"127.0.0.1:%d\"}\n", os.Args[0], helperEnv, tcpPort, tcpPort),
				"http.yaml":   fmt.Sprintf("command: [%q]\nenv: {%s: http, HELPER_ADDR: \"127.0.0.1:%d\"}\nready: {http: \"http://127.0.0.1:%d/health\"}\n", os.Args[0], helperEnv, httpPort, httpPort),
				"log.yaml":    unitYAML("log", "ready: {log: \"ready to serve$\"}\n"),
				"notify.yaml": unitYAML("notify", "ready: {notify: true}\n"),
				"never.yaml":  unitYAML("sleep", fmt.Sprintf("ready: {tcp: \"127.0.0.1:%d\"}\ntimeouts: {start: 1h}\n", deadPort)),
				"silent.yaml": unitYAML("sleep", "ready: {notify: true}\ntimeouts: {start: 1h}\n"),
			})
			m := l.waitFor("probed units ready", running("tcp", "http", "log", "notify"))
			for _, n := range []string{"tcp", "http", "log", "notify"} {
				if !m[n].Ready {
					t.Errorf("%s: not ready while running", n)
				}
			}
			for _, n := range []string{"never", "silent"} {
				if u := m[n]; u.State != "starting" || u.Ready || u.PID == 0 {
					t.Errorf("%s: state %s ready %v pid %d, want started but not ready", n, u.State, u.Ready, u.PID)
				}
			}
		})
	}
}

func TestPortHolderNamed(t *testing.T) {
	port := testkit.FreePorts(t, 1)[0]
	l := startLive(t, map[string]string{
		"holder.yaml": fmt.Sprintf("command: [%q]\nenv: {%s: tcp, HELPER_ADDR: \"127.0.0.1:%d\"}\nready: {tcp: \"127.0.0.1:%d\"}\n", os.Args[0], helperEnv, port, port),
	})
	l.waitFor("holder ready", running("holder"))
	writeUnit(t, l.dir, "web.yaml", unitYAML("sleep", fmt.Sprintf("ports: [%d]\n", port)))
	if _, err := l.r.Reload(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	m := l.waitFor("web failed", func(m map[string]control.Unit) bool { return m["web"].State == "failed" })
	var pe *PortError
	var err error
	l.r.do(t.Context(), func(context.Context) { err = l.r.units["web"].err })
	if !errors.As(err, &pe) || !errors.Is(err, ErrPortHeld) {
		t.Fatalf("web error %v, want a *PortError", err)
	}
	self := os.Getpid()
	if pe.PID != m["holder"].PID || pe.HolderUnit != "holder" || !pe.InLedger || pe.Owner.PID != self || !pe.OwnerAlive {
		t.Errorf("holder named as %+v, want pid %d, unit holder, owner %d alive", pe, m["holder"].PID, self)
	}
	for _, want := range []string{fmt.Sprint(m["holder"].PID), "hermesctl adopt", "unit holder"} {
		if !strings.Contains(m["web"].Error, want) {
			t.Errorf("status error %q does not mention %q", m["web"].Error, want)
		}
	}
}

// testLogger logs to the test's log with HERMES_TEST_LOG=1, else nowhere.
func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("HERMES_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, nil))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}
