package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

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
