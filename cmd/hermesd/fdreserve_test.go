//go:build linux

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
)

// TestMetricsFloodKeepsReserve: a stranger opening connections to
// metrics.listen, as many as it can, never takes the descriptors hermesd
// needs for its units and its control API. Under RLIMIT_NOFILE 256, with
// 400 such connections held open, hermesd still restarts a unit (whose
// log it opens anew) and answers status. It used to accept them until
// its descriptors ran out, after which a restart failed with "open log:
// too many open files" and the control API stopped answering.
func TestMetricsFloodKeepsReserve(t *testing.T) {
	needsProcesses(t, "hermesd processes")
	const limit, flood = 256, 400
	dir := t.TempDir()
	writeUnits(t, dir, map[string]string{"web": "owned"})
	config := filepath.Join(dir, "hermes.yaml")
	writeFile(t, config, "metrics: {listen: \"127.0.0.1:0\"}\n")
	d := startDaemonWith(t, dir, daemonOpts{config: config, shell: fmt.Sprintf("ulimit -n %d", limit)})
	logPath := filepath.Join(dir, "hermesd.log")
	listening := regexp.MustCompile(`metrics listening.* listen=(127\.0\.0\.1:\d+)`)
	if err := testkit.WaitFile(logPath, listening, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(logPath)
	addr := string(listening.FindSubmatch(b)[1])
	d.waitUnit("web", "running", func(u control.Unit) bool { return u.State == "running" })

	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range flood {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			break
		}
		conns = append(conns, c)
	}
	// The flood is over once hermesd has taken every connection it will:
	// it says it closes the rest, or its descriptors are all used.
	pid := d.cmd.Process.Pid
	testkit.Eventually(t, 20*time.Second, "hermesd to take the flood", func() bool {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "metrics: closed a connection") || openFDs(pid) >= limit-4
	})
	t.Logf("%d connections to metrics.listen open; hermesd holds %d descriptors of %d", len(conns), openFDs(pid), limit)

	c := d.client()
	for i := range 3 {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		err := c.Restart(ctx, "web")
		cancel()
		if err != nil {
			t.Fatalf("restart %d of web during the flood: %v%s", i+1, err, d.logTail())
		}
		d.waitUnit("web", "running again", func(u control.Unit) bool { return u.State == "running" })
	}
	if b, _ := os.ReadFile(logPath); strings.Contains(string(b), "too many open files") {
		t.Errorf("hermesd ran out of descriptors during the flood:%s", d.logTail())
	}
}

// openFDs counts pid's open descriptors, 0 when it cannot.
func openFDs(pid int) int {
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0
	}
	return len(es)
}
