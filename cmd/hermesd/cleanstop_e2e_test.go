package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
)

// TestCleanStopLogsNoWarning: hermesd stopped by TERM, with owned units in
// three levels of dependencies and one alone (so its stop is several
// batches, the last released as Run ends), logs nothing at WARN or ERROR
// from its start to its exit. It logged "units stopped; the release of
// their groups failed err=\"context canceled\"" at every clean stop.
func TestCleanStopLogsNoWarning(t *testing.T) {
	needsProcesses(t, "hermesd and unit processes")
	dir := t.TempDir()
	testkit.WriteUnits(t, filepath.Join(dir, "units"), map[string]string{
		"a.yaml": unitYAML(""),
		"b.yaml": unitYAML("") + "requires: [a]\n",
		"c.yaml": unitYAML("") + "requires: [b]\n",
		"d.yaml": unitYAML(""),
	})
	d := startDaemon(t, dir, "gateway")
	d.waitStatus("every unit running", runningAll("a", "b", "c", "d"))
	d.stopClean()
	log, err := os.ReadFile(filepath.Join(dir, "hermesd.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)msg="hermesd stopped"`).Match(log) {
		t.Fatalf("hermesd's log does not say it stopped:\n%s", log)
	}
	for _, line := range regexp.MustCompile(`(?m)^.*level=(WARN|ERROR).*$`).FindAll(log, -1) {
		// The test's NOTIFY_SOCKET is gone once hermesd said READY=1
		// (testkit.StartReady), so its STOPPING=1 finds no socket: a
		// service manager keeps its socket for the service's life.
		if regexp.MustCompile(`msg="sd_notify failed" err="dial unixgram [^"]*: connect: no such file or directory"`).Match(line) {
			continue
		}
		t.Errorf("a clean stop logged: %s", line)
	}
}

// inotifyFDs counts pid's inotify instances.
func inotifyFDs(pid int) int {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, _ := os.ReadDir(dir)
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && l == "anon_inode:inotify" {
			n++
		}
	}
	return n
}

// TestCleanStopEndsWatchesFirst: hermesd's units watcher and log rotation
// end as its clean stop begins, not after it: tearing down an inotify
// instance that watched anything waits for a kernel grace period (often
// 10 to 20 ms), which then passes beside the units' stop rather than after
// it. Seen by hermesd's inotify descriptors, all closed while a unit that
// ignores TERM still runs.
func TestCleanStopEndsWatchesFirst(t *testing.T) {
	needsProcesses(t, "hermesd and unit processes")
	dir := t.TempDir()
	testkit.WriteUnits(t, filepath.Join(dir, "units"), map[string]string{
		// Ready once its trap is set: a TERM before that would end it.
		"deaf.yaml": "command: [sh, -c, \"trap '' TERM; echo trapped; while :; do sleep 0.05; done\"]\nready: {log: '^trapped$'}\ntimeouts: {stop: 60s}\n",
	})
	d := startDaemon(t, dir, "gateway")
	u := d.waitStatus("deaf ready, its trap set", func(_ control.Status, u map[string]control.Unit) bool {
		x, ok := u["deaf"]
		return running(x, ok) && x.Ready
	})
	pid := d.cmd.Process.Pid
	if n := inotifyFDs(pid); n == 0 {
		t.Fatal("hermesd holds no inotify instance while it runs: nothing to see")
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	closed := testkit.Within(20*time.Second, func() bool { return inotifyFDs(pid) == 0 })
	alive := syscall.Kill(u["deaf"].PID, 0) == nil
	syscall.Kill(-u["deaf"].PGID, syscall.SIGKILL) // the stop may end now
	if err := <-d.done; err != nil {
		t.Errorf("hermesd's clean stop: %v", err)
	}
	if !closed || !alive {
		t.Errorf("hermesd's inotify instances closed while its unit still stopped: %v (the unit alive then: %v)", closed, alive)
	}
}
