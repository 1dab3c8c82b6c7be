package reconciler

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/notify"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
)

// records keeps the messages a Logger logged, for a test to wait on.
type records struct {
	mu   sync.Mutex
	msgs []string // guarded by mu
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *records) WithGroup(string) slog.Handler            { return r }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	line := rec.Message
	rec.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
	r.mu.Lock()
	r.msgs = append(r.msgs, line)
	r.mu.Unlock()
	return nil
}

func (r *records) has(substr ...string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.msgs, func(m string) bool {
		for _, s := range substr {
			if !strings.Contains(m, s) {
				return false
			}
		}
		return true
	})
}

// notifySocketOf is the NOTIFY_SOCKET pid started with ("" without one).
func notifySocketOf(t *testing.T, pid int) string {
	t.Helper()
	// A process whose exec the kernel has reported (the spawn returned)
	// may not have its new environment set up yet: its environ reads
	// empty for that moment. Every unit here has one.
	var env []string
	testkit.EventuallyOK(t, 15*time.Second, func() error {
		var err error
		if env, err = proc.Environ(pid); err != nil {
			t.Fatalf("environment of %d: %v", pid, err)
		}
		if len(env) == 0 {
			return fmt.Errorf("the environment of %d reads empty", pid)
		}
		return nil
	})
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "NOTIFY_SOCKET="); ok {
			return v
		}
	}
	return ""
}

// TestNotifySocketPerUnit: in the per-unit mode each unit that listens
// for sd_notify is told a socket of its own, in the private directory; a
// unit that does not is told none; READY=1 on one unit's socket readies
// that unit and no other; the socket is gone when the run ends and the
// next run gets another. On Linux a message on a unit's socket from a live
// process outside the unit is ignored.
func TestNotifySocketPerUnit(t *testing.T) {
	rec := &records{}
	l := startLiveWith(t, liveOptions{notify: notify.ModeUnit, logger: slog.New(rec)}, map[string]string{
		"ready.yaml":  unitYAML("notify", "ready: {notify: true}\n"),
		"silent.yaml": unitYAML("sleep", "ready: {notify: true}\ntimeouts: {start: 1h}\n"),
		"dog.yaml":    unitYAML("sleep", "timeouts: {watchdog: 1h}\n"),
		"plain.yaml":  unitYAML("sleep", ""),
	})
	dir := filepath.Join(filepath.Dir(l.state), "notify")
	m := l.waitFor("ready, dog and plain running, silent started", func(m map[string]control.Unit) bool {
		return running("ready", "dog", "plain")(m) && m["silent"].State == "starting" && m["silent"].PID != 0
	})
	if !m["ready"].Ready || m["silent"].Ready {
		t.Errorf("ready, silent: Ready %v, %v; want true, false", m["ready"].Ready, m["silent"].Ready)
	}
	socks := map[string]string{}
	for _, n := range []string{"ready", "silent", "dog", "plain"} {
		socks[n] = notifySocketOf(t, m[n].PID)
	}
	if socks["plain"] != "" {
		t.Errorf("plain: NOTIFY_SOCKET=%s, want none (it listens for nothing)", socks["plain"])
	}
	for _, n := range []string{"ready", "silent", "dog"} {
		if filepath.Dir(socks[n]) != dir {
			t.Errorf("%s: NOTIFY_SOCKET=%q, want a socket in %s", n, socks[n], dir)
		}
	}
	if socks["ready"] == socks["silent"] || socks["silent"] == socks["dog"] || socks["ready"] == socks["dog"] {
		t.Errorf("sockets %v, want one per unit", socks)
	}
	testkit.Perms(t, map[string]os.FileMode{dir: 0o700, socks["silent"]: 0o600})

	if runtime.GOOS == "linux" {
		// This test process is no process of silent: its READY=1 is ignored.
		send(t, socks["silent"], "READY=1")
		testkit.EventuallyOK(t, 15*time.Second, func() error {
			if rec.has("outside it; ignored", "unit=silent", fmt.Sprintf("pid=%d", os.Getpid())) {
				return nil
			}
			return errors.New("no log of the foreign READY=1 on silent's socket being ignored")
		})
		if m := l.waitFor("status", func(map[string]control.Unit) bool { return true }); m["silent"].Ready || m["silent"].State != "starting" {
			t.Errorf("silent after a foreign READY=1: state %s ready %v, want starting, not ready", m["silent"].State, m["silent"].Ready)
		}
	}

	if err := l.r.Restart(t.Context(), "silent"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(socks["silent"]); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the ended run's socket %s: %v, want it removed", socks["silent"], err)
	}
	m = l.waitFor("silent started again", func(m map[string]control.Unit) bool {
		return m["silent"].State == "starting" && m["silent"].PID != 0
	})
	again := notifySocketOf(t, m["silent"].PID)
	if again == "" || again == socks["silent"] {
		t.Errorf("silent's next run: NOTIFY_SOCKET=%q, want a new socket (the last was %s)", again, socks["silent"])
	}
}

// send writes one datagram to the socket at path.
func send(t *testing.T, path, msg string) {
	t.Helper()
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
}

// TestNotifyFromAnotherUnitsGroup: on the shared NOTIFY_SOCKET, a child of
// unit atk that joins the process group of unit victim and sends READY=1
// and WATCHDOG=1 does not speak for victim: in cgroup mode the sender's
// cgroup (atk's) names its unit, in pgroup mode the session its unit's
// leader leads. victim, which never signals, stays starting and not
// ready.
func TestNotifyFromAnotherUnitsGroup(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the shared socket needs the sender's credentials (Linux)")
	}
	for _, mode := range bothModes {
		t.Run(string(mode), func(t *testing.T) {
			rec := &records{}
			l := startLiveWith(t, liveOptions{mode: mode, notify: notify.ModeShared, logger: slog.New(rec)}, map[string]string{
				"victim.yaml": unitYAML("sleep", "ready: {notify: true}\ntimeouts: {start: 1h}\n"),
			})
			m := l.waitFor("victim started", func(m map[string]control.Unit) bool { return m["victim"].PID != 0 })
			v := m["victim"]
			if st, err := proc.ReadStat(v.PID); mode == supervisor.ModePGroup && (err != nil || st.SID != v.PID) {
				t.Skipf("victim's leader %d leads no session of its own (session %d): units run in hermesd's session here, and in pgroup mode only a session of its own fences a unit's group", v.PID, st.SID)
			}
			writeUnit(t, l.dir, "atk.yaml", fmt.Sprintf("command: [%q]\nenv: {%s: joinsend, JOIN_PGID: \"%d\"}\n", os.Args[0], helperEnv, v.PGID))
			if _, err := l.r.Reload(t.Context(), false); err != nil {
				t.Fatal(err)
			}
			testkit.EventuallyOK(t, 15*time.Second, func() error {
				if rec.has("status=attack-done") {
					return nil
				}
				return errors.New("the attacker's last message not handled yet")
			})
			m = l.waitFor("status", func(map[string]control.Unit) bool { return true })
			if u := m["victim"]; u.Ready || u.State != "starting" {
				t.Errorf("victim after atk's child spoke from its group: state %s ready %v, want starting, not ready", u.State, u.Ready)
			}
			if rec.has("unit status", "unit=victim") {
				t.Errorf("atk's child's STATUS= was taken for victim's")
			}
		})
	}
}
