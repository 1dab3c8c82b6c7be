package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/logfile"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
)

// TestStampsByDefault: a hermesd started with no setting writes an owned
// unit's lines as records (the time it read each, the stream);
// HERMES_LOG_STAMPS=0 lets the unit write its log file directly.
func TestStampsByDefault(t *testing.T) {
	needsProcesses(t, "hermesd processes")
	for _, tc := range []struct {
		name    string
		env     []string
		stamped bool
	}{
		{"default", nil, true},
		{"HERMES_LOG_STAMPS=0", []string{stampEnv + "=0"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeUnits(t, dir, map[string]string{"web": "owned"})
			before := time.Now()
			d := startDaemonWith(t, dir, daemonOpts{role: "gateway", env: tc.env})
			web := leaderOf(t, filepath.Join(dir, "state"), "web")
			log := d.status()["web"].Log
			want := fmt.Sprintf("started %d", web.PID)
			if !fileHas(log, want, 10*time.Second) {
				t.Fatalf("%s has no %q", log, want)
			}
			b, _ := os.ReadFile(log)
			r := logfile.ParseRecord(strings.TrimSuffix(string(b), "\n"))
			switch {
			case tc.stamped && (!r.Stamped() || r.Stream != logfile.Stdout || r.Text != want || r.Time.Before(before)):
				t.Errorf("%s holds %q, want a record: hermesd's time (after %v), stdout, %q", log, b, before, want)
			case !tc.stamped && string(b) != want+"\n":
				t.Errorf("%s holds %q, want the line as printed", log, b)
			}
		})
	}
}

// TestReleasedOutputRelayed: an owned unit writes numbered lines as fast
// as it can, on stdout and stderr; it is released while it writes, and
// hermesd is killed (SIGKILL). The relay hermesd handed the copy to, in a
// process group of its own, outlives hermesd and writes on, stamped; the
// unit does not die of SIGPIPE; the log holds every line once, in order;
// the relay exits when the unit's group ends.
func TestReleasedOutputRelayed(t *testing.T) {
	needsProcesses(t, "hermesd processes")
	for _, mode := range supervisorModes {
		t.Run(mode, func(t *testing.T) {
			needMode(t, mode)
			releasedRelayed(t, mode)
		})
	}
}

func releasedRelayed(t *testing.T, mode string) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	shellUnit(t, dir, "fast", `i=0; while :; do echo "$i"; echo "$i" >&2; i=$((i+1)); [ $((i % 50)) -ne 0 ] || sleep 0.01; done`, "owned")
	d := startDaemonWith(t, dir, daemonOpts{role: "gateway", mode: mode})
	fast := leaderOf(t, state, "fast")
	killGroupAtEnd(t, fast)
	log := d.status()["fast"].Log
	if !testkit.Within(10*time.Second, func() bool { fi, err := os.Stat(log); return err == nil && fi.Size() > 20000 }) {
		t.Fatalf("%s does not grow", log)
	}
	res, err := d.client().Release(t.Context(), "fast")
	if err != nil {
		t.Fatal(err)
	}
	if res.PGID != fast.PID {
		t.Fatalf("release: %+v, want group %d", res, fast.PID)
	}
	hermesdGroup, _ := syscall.Getpgid(d.cmd.Process.Pid)
	d.kill()
	killed := time.Now()
	// The relay writes on after hermesd's death: records read after it,
	// on both streams.
	testkit.EventuallyOK(t, 20*time.Second, func() error {
		after := map[logfile.Stream]int{}
		b, _ := os.ReadFile(log)
		for line := range strings.Lines(string(b)) {
			if r := logfile.ParseRecord(strings.TrimSuffix(line, "\n")); r.Stamped() && r.Time.After(killed) {
				after[r.Stream]++
			}
		}
		if after[logfile.Stdout] < 200 || after[logfile.Stderr] < 200 {
			return fmt.Errorf("records read after hermesd's SIGKILL: %v, want over 200 on each stream (the unit alive: %v)", after, fast.Alive())
		}
		return nil
	})
	if !fast.Alive() {
		t.Fatalf("the released unit %d died after hermesd's SIGKILL (SIGPIPE?)", fast.PID)
	}
	relay := relayOf(t, state, "fast")
	t.Cleanup(func() {
		if relay.Alive() {
			syscall.Kill(relay.PID, syscall.SIGKILL)
		}
	})
	st, err := proc.ReadStat(relay.PID)
	if err != nil {
		t.Fatal(err)
	}
	if st.PGID != relay.PID || st.PGID == hermesdGroup || st.PGID == fast.PID {
		t.Errorf("the relay %d is in group %d (hermesd's %d, the unit's %d), want a group of its own", relay.PID, st.PGID, hermesdGroup, fast.PID)
	}
	syscall.Kill(-fast.PID, syscall.SIGKILL)
	if !goneWithin(relay, 20*time.Second) {
		t.Errorf("the relay %d still runs 20s after the unit's group was killed: it must exit at EOF", relay.PID)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lines in the log: %v", testkit.CheckNumbered(t, b, record))
}

// relayOf finds the live relay of unit whose log file is under state
// (the relay holds it as its descriptor relayLog).
func relayOf(t *testing.T, state, unit string) proc.Identity {
	t.Helper()
	var found proc.Identity
	testkit.Eventually(t, 10*time.Second, "the log relay of "+unit, func() bool {
		pids, _ := proc.Find(func(proc.Stat) bool { return true })
		for _, pid := range pids {
			a, err := proc.Cmdline(pid)
			if err != nil || len(a) != 3 || !slices.Equal(a[1:], []string{relayArg, unit}) {
				continue
			}
			if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, relayLog)); err != nil || !strings.HasPrefix(l, state+string(filepath.Separator)) {
				continue
			}
			if id, err := proc.Read(pid); err == nil {
				found = id
				return true
			}
		}
		return false
	})
	return found
}

// record reads a line of a log for testkit.CheckNumbered.
func record(line string) (logfile.Stream, string, bool, bool) {
	r := logfile.ParseRecord(line)
	return r.Stream, r.Text, r.Partial, r.Stamped()
}

// logText is the text of a log's lines without their records' headers
// (an owned unit's log is records, hermesd's time and the stream first).
func logText(b []byte) string {
	var out strings.Builder
	for line := range strings.Lines(string(b)) {
		out.WriteString(logfile.ParseRecord(strings.TrimSuffix(line, "\n")).Text)
		out.WriteByte('\n')
	}
	return out.String()
}
