//go:build linux

package main

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hermes-units/hermes/internal/testkit"
)

// TestRealPostgres is the real-program suite's postgres (the Debian
// package postgresql), run as its package runs it: as its own user, which
// it insists on (it refuses to run as root). A oneshot initdb and the
// server, both with user: postgres, the server after: the oneshot; the
// server is ready on its port, its main process holds the listener and
// runs as postgres, with the unit's limits.nofile and umask, its other
// processes are the unit's, and stop leaves none of them. In each
// supervisor mode.
func TestRealPostgres(t *testing.T) {
	needsProcesses(t, "hermesd and postgres")
	if os.Geteuid() != 0 {
		t.Skip("user: postgres needs hermesd to run as root")
	}
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(bins) == 0 {
		t.Skip("postgres not found in /usr/lib/postgresql/*/bin (.ci/run installs the Debian package postgresql)")
	}
	pg, err := user.Lookup("postgres")
	if err != nil {
		t.Skipf("no user postgres: %v", err)
	}
	bin := filepath.Dir(bins[len(bins)-1])
	ports := testkit.FreePorts(t, len(supervisorModes))
	for i, mode := range supervisorModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			needMode(t, mode)
			runPostgres(t, mode, bin, pg, ports[i])
		})
	}
}

func runPostgres(t *testing.T, mode, bin string, pg *user.User, port int) {
	// The data directory where the user postgres may go: the test's own
	// directories are root's alone.
	data, err := os.MkdirTemp("", "hermes-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(data) })
	uid, _ := strconv.Atoi(pg.Uid)
	gid, _ := strconv.Atoi(pg.Gid)
	if err := os.Chown(data, uid, gid); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(data, "db")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "units", "pg-init.yaml"), fmt.Sprintf(
		"type: oneshot\nuser: postgres\nworkdir: %q\ncommand: [%q, -D, %q, --no-locale, -E, UTF8, --auth=trust, -U, postgres]\n",
		data, filepath.Join(bin, "initdb"), db))
	ru := realUnit{name: "postgres", needs: "postgres", program: filepath.Join(bin, "postgres"), port: port, workers: true}
	ru.yaml = fmt.Sprintf("user: postgres\nworkdir: %q\ncommand: [%q, -D, %q, -p, \"%d\", -k, %q, -c, listen_addresses=127.0.0.1]\n"+
		"after: [pg-init]\nready: {tcp: \"127.0.0.1:%d\"}\nports: [%d]\nlimits: {nofile: 4096}\numask: \"0077\"\ntimeouts: {stop: 20s}\n",
		data, ru.program, db, port, data, port, port)
	writeFile(t, filepath.Join(dir, "units", "postgres.yaml"), ru.yaml)
	d := startDaemonWith(t, dir, daemonOpts{role: "gateway", mode: mode})
	u := waitSuite(d, []realUnit{{name: "pg-init", oneshot: true}, ru})
	x := u["postgres"]
	checkMain(t, x, ru)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", x.PID))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Uid:\t" + strings.Repeat(pg.Uid+"\t", 3) + pg.Uid, "Gid:\t" + strings.Repeat(pg.Gid+"\t", 3) + pg.Gid, "Umask:\t0077"} {
		if !strings.Contains(string(status), want) {
			t.Errorf("postgres (pid %d): no %q in its /proc status:\n%s", x.PID, want, status)
		}
	}
	limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", x.PID))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(strings.Fields(string(limits)), " "), "Max open files 4096 4096 files") {
		t.Errorf("postgres (pid %d): open files not 4096:\n%s", x.PID, limits)
	}
	ids := processesOf(t, x, ru)
	if len(ids) < 2 {
		t.Errorf("postgres: processes %v, want the server and its background workers", ids)
	}
	if err := d.client().Stop(t.Context(), "postgres"); err != nil {
		t.Fatalf("stop postgres: %v", err)
	}
	for _, id := range ids {
		if !goneWithin(id, realDeadline) {
			t.Errorf("postgres: process %d still alive %v after stop returned", id.PID, realDeadline)
		}
	}
}
