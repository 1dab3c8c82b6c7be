package reconciler

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
)

var bothModes = []supervisor.Mode{supervisor.ModeCgroup, supervisor.ModePGroup}

// daemonize is a launcher that starts a daemon (setsid: it leaves the
// launcher's process group and session) and exits 0. The daemon writes its
// own pid to $PIDF when write is set, as nginx and redis do, then sleeps.
func daemonize(pidf string, write bool) string {
	body := "exec sleep 300"
	if write {
		body = `echo $$ > "$PIDF"; exec sleep 300`
	}
	return fmt.Sprintf("shell: |\n  setsid sh -c '%s' </dev/null >/dev/null 2>&1 &\n  exit 0\nenv: {PIDF: %q}\n", body, pidf)
}

// startDaemonUnit starts unit d in mode: head, "{pid_file}" replaced by
// the path of a fresh pid file, then a launcher that daemonizes a process
// writing its pid there. It returns the live harness and the pid file.
func startDaemonUnit(t *testing.T, mode supervisor.Mode, head string) (*live, string) {
	t.Helper()
	pidf := filepath.Join(t.TempDir(), "d.pid")
	return startLiveMode(t, mode, map[string]string{"d.yaml": strings.ReplaceAll(head, "{pid_file}", pidf) + daemonize(pidf, true)}), pidf
}

// readPID waits for a pid file to hold a pid and returns it.
func readPID(t *testing.T, path string) int {
	t.Helper()
	pid := 0
	testkit.Eventually(t, 15*time.Second, "a pid in "+path, func() bool {
		b, _ := os.ReadFile(path)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pid > 1
	})
	return pid
}

// TestForkingPIDFile: a forking unit's launcher daemonizes and exits 0; the
// unit runs with the daemon's pid from pid_file as its main pid, is
// restarted when that process dies, and stop leaves no process.
func TestForkingPIDFile(t *testing.T) {
	for _, mode := range bothModes {
		t.Run(string(mode), func(t *testing.T) {
			l, pidf := startDaemonUnit(t, mode, "type: forking\npid_file: {pid_file}\nrestart_sec: 10ms\n")
			m := l.waitFor("d running with its daemon's pid", func(m map[string]control.Unit) bool {
				return running("d")(m) && m["d"].Ready
			})
			pid := readPID(t, pidf)
			if m["d"].PID != pid {
				t.Fatalf("status pid %d, want the daemon's %d (from pid_file)", m["d"].PID, pid)
			}
			if m["d"].PGID != pid { // it called setsid: the launcher's group is gone
				t.Errorf("status pgid %d, want the daemon's own group %d", m["d"].PGID, pid)
			}
			daemon := testkit.Identity(t, pid)
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			m = l.waitFor("d restarted with a new daemon", func(m map[string]control.Unit) bool {
				return running("d")(m) && m["d"].Restarts == 1 && m["d"].PID != pid
			})
			if !strings.Contains(m["d"].Error, "main process") && m["d"].Error != "" {
				t.Logf("error after the restart: %s", m["d"].Error)
			}
			again := testkit.Identity(t, m["d"].PID)
			if daemon.Alive() {
				t.Errorf("killed daemon %d still alive", pid)
			}
			stopLeavesNone(t, l, "d", again)
		})
	}
}

// TestForkingSingleProcess: without pid_file, the one process the
// launcher left is the main one.
func TestForkingSingleProcess(t *testing.T) {
	for _, mode := range bothModes {
		t.Run(string(mode), func(t *testing.T) {
			l, pidf := startDaemonUnit(t, mode, "type: forking\n")
			m := l.waitFor("d running", running("d"))
			if pid := readPID(t, pidf); m["d"].PID != pid {
				t.Errorf("status pid %d, want the one process left, %d", m["d"].PID, pid)
			}
		})
	}
}

// TestForkingPIDFileRefused: a pid file that is missing, stale, or names a
// process outside the unit's group fails the unit with an error that says
// which; the stranger is never signalled.
func TestForkingPIDFileRefused(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stranger := exec.Command("sleep", "300")
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stranger.Process.Kill(); stranger.Wait() })
	strangerPID := []byte(strconv.Itoa(stranger.Process.Pid) + "\n")
	tests := []struct {
		name    string
		content string            // written to the pid file before the start; "" none
		plant   func(path string) // or what to leave at the pid file's path
		want    string
	}{
		{"missing", "", nil, "is missing: the daemon did not write it within timeouts.start"},
		{"stale", strconv.Itoa(dead.Process.Pid), nil, fmt.Sprintf("is stale: it names pid %d, which is not running", dead.Process.Pid)},
		{"stranger", strconv.Itoa(stranger.Process.Pid), nil, fmt.Sprintf("names pid %d (sleep), which is not in the unit's group: a stranger", stranger.Process.Pid)},
		{"garbage", "hello", nil, `holds "hello", not a pid`},
		{"fifo with no writer", "", func(path string) { mustDo(t, syscall.Mkfifo(path, 0o600)) }, "is not a regular file"},
		{"link to /dev/zero", "", func(path string) { mustDo(t, os.Symlink("/dev/zero", path)) }, "is a symbolic link"},
		{"link to a file", "", func(path string) {
			real := path + ".real"
			mustDo(t, os.WriteFile(real, strangerPID, 0o600))
			mustDo(t, os.Symlink(real, path))
		}, "is a symbolic link"},
		{"another user's", "", func(path string) {
			if os.Geteuid() != 0 {
				t.Skip("giving a file to another user needs root")
			}
			mustDo(t, os.WriteFile(path, strangerPID, 0o644))
			mustDo(t, os.Chown(path, 65534, 65534))
		}, "belongs to uid 65534, not to uid 0 that runs hermesd (nor to root): another user could name any process in it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pidf := filepath.Join(t.TempDir(), "d.pid")
			if tt.content != "" {
				if err := os.WriteFile(pidf, []byte(tt.content+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tt.plant != nil {
				tt.plant(pidf)
			}
			// A pid file refused is read again until timeouts.start (it
			// may be one being written), then the unit fails with why.
			// 3 s: a launcher slow to exit on a loaded machine must not
			// fail the unit for its lateness before its pid file is read.
			l := startLiveMode(t, supervisor.ModePGroup, map[string]string{
				"d.yaml": "type: forking\npid_file: " + pidf + "\nrestart: \"no\"\ntimeouts: {start: 3s}\n" + daemonize(pidf, false),
			})
			m := l.waitFor("d failed", func(m map[string]control.Unit) bool { return m["d"].State == "failed" })
			if !strings.Contains(m["d"].Error, "pid file "+pidf+" "+tt.want) {
				t.Errorf("got error %q, want it to contain %q", m["d"].Error, "pid file "+pidf+" "+tt.want)
			}
			if stranger.ProcessState != nil {
				t.Errorf("the stranger was signalled: %v", stranger.ProcessState)
			}
		})
	}
}

// TestSimpleDaemonized: a simple unit whose leader exits 0 leaving a
// daemon is named, not hidden: the daemon stays with the unit (neither
// killed nor let go), status says running with no main pid and what to
// do, and stop stops the daemon.
func TestSimpleDaemonized(t *testing.T) {
	for _, mode := range bothModes {
		t.Run(string(mode), func(t *testing.T) {
			l, pidf := startDaemonUnit(t, mode, "")
			daemon := testkit.Identity(t, readPID(t, pidf))
			m := l.waitFor("d daemonized", func(m map[string]control.Unit) bool { return m["d"].Daemonized > 0 })
			want := "the program daemonized (1 processes left): declare `type: forking` (and `pid_file`), or run it in the foreground (nginx: `-g 'daemon off;'`, redis: `--daemonize no`)"
			if u := m["d"]; u.State != "running" || u.PID != 0 || u.Daemonized != 1 || u.Error != want {
				t.Errorf("got state %s pid %d daemonized %d error %q;\nwant running, pid 0, 1, %q", u.State, u.PID, u.Daemonized, u.Error, want)
			}
			if !daemon.Alive() {
				t.Fatalf("the daemon %d was stopped with its leader", daemon.PID)
			}
			stopLeavesNone(t, l, "d", daemon)
		})
	}
}

// TestForkingSurvivor: in cgroup mode a forking survivor's ledger entry is
// moved from its launcher, which exited, to its daemon (the process a next
// owner holds against the kernel and re-adopts), and status names the
// daemon; in pgroup mode, where nothing would find the daemon once hermesd
// is gone, the unit is refused before anything starts.
func TestForkingSurvivor(t *testing.T) {
	for _, mode := range bothModes {
		t.Run(string(mode), func(t *testing.T) {
			l, pidf := startDaemonUnit(t, mode, "type: forking\npid_file: {pid_file}\nownership: adoptable\nreason: test\n")
			if mode == supervisor.ModePGroup {
				m := l.waitFor("d refused", func(m map[string]control.Unit) bool { return m["d"].State == "failed" })
				if !strings.Contains(m["d"].Error, "type: forking with ownership: adoptable needs cgroup mode") {
					t.Errorf("error %q, want the refusal that names cgroup mode", m["d"].Error)
				}
				if _, err := os.Stat(pidf); err == nil {
					t.Error("the refused unit ran: its daemon wrote its pid file")
				}
				return
			}
			m := l.waitFor("d running", running("d"))
			daemon := readPID(t, pidf)
			t.Cleanup(func() { syscall.Kill(daemon, syscall.SIGKILL) })
			if m["d"].PID != daemon {
				t.Errorf("status pid %d, want the daemon %d", m["d"].PID, daemon)
			}
			led, err := ledger.Open(l.state)
			if err != nil {
				t.Fatal(err)
			}
			testkit.Eventually(t, 15*time.Second, "the ledger entry led by the daemon", func() bool {
				es, _ := led.Entries(t.Context())
				return len(es) == 1 && es[0].Leader.PID == daemon && es[0].PGID == daemon && led.Check(es[0]) == nil
			})
		})
	}
}

// stopLeavesNone stops unit through the reconciler and checks that none
// of procs is alive once Stop returned.
func stopLeavesNone(t *testing.T, l *live, unit string, procs ...proc.Identity) {
	t.Helper()
	if err := l.r.Stop(t.Context(), unit); err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if p.Alive() {
			t.Errorf("after stopping %s: process %d is still alive, want none left", unit, p.PID)
		}
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestPIDFileReadBounded: a pid file far bigger than a pid (here a sparse
// 1 GiB one) is refused without being read: reading it costs a few
// bytes, not its size.
func TestPIDFileReadBounded(t *testing.T) {
	pidf := filepath.Join(t.TempDir(), "d.pid")
	f, err := os.Create(pidf)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, final, err := pickPIDFile([]proc.Identity{{PID: os.Getpid()}}, pidf)
	runtime.ReadMemStats(&after)
	if want := "pid file " + pidf + " holds 1073741824 bytes, not a pid"; err == nil || err.Error() != want || !final {
		t.Errorf("got final %v error %v, want final and %q", final, err, want)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("reading the pid file allocated %d bytes, want at most 1 MiB", got)
	}
}
