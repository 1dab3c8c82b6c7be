//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/events"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/internal/testkit/procfd"
	"github.com/hermes-units/hermes/proc"
	"golang.org/x/sys/unix"
)

// The real-program suite: nginx, redis-server and python3's http.server
// run under hermesd as a user would declare them, one gateway per
// supervisor mode holding them all: nginx as `forking` (daemon on, the
// main process guessed: no pid_file) and as `simple` (daemon off), redis
// as `forking` (--daemonize yes, pid_file) and as `simple`, a `migrate`
// oneshot before an `app` (http.server, after: [migrate]), and an
// adoptable http.server that outlives hermesd. .ci/run installs the
// programs (Debian: nginx-light, redis-server); a program missing here is
// named and its units are left out.
//
// Three survivors: http.server, nginx in the foreground, and redis as a
// forking daemon with its pid file. nginx and redis write their process
// title over their environment, and with it the spawn tags; the next
// hermesd trusts their ledger entries by the spawn's log they hold as
// stdout (pgroup mode) or by their hermes cgroup (ledger.Check). A
// forking survivor is refused in pgroup mode, where nothing would find its
// daemon once hermesd is gone: that row checks the refusal.

// realDeadline bounds each wait of the suite for a process to end.
const realDeadline = 10 * time.Second

// realUnit is one unit of the suite and what its program promises.
type realUnit struct {
	name    string
	program string // the path of the program it runs; "" when the machine has none
	needs   string // the program's name, for the skip message
	yaml    string // the unit file
	port    int    // what its ready probe dials; the main pid holds the listener
	pidFile string // where the program writes its own pid; "" when it writes none
	workers bool   // processes below the main one (nginx's two workers)
	oneshot bool
	kept    bool   // ownership: adoptable: survives hermesd's kill -9, and is re-adopted
	refused string // the unit fails at its start with this error, nothing started
}

// program returns the path of a real program the suite runs, or "" when
// the machine has none: PATH first, then /usr/sbin, where Debian puts nginx
// (outside a normal user's PATH).
func program(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := filepath.Join("/usr/sbin", name); unix.Access(p, unix.X_OK) == nil {
		return p
	}
	return ""
}

// nginxUnit is nginx on port with its prefix, config, pid file and logs in
// a directory of its own, in the foreground (daemon off, type simple) or
// daemonizing (daemon on, type forking, the main process found as the one
// process the launcher left: no pid_file).
func nginxUnit(t *testing.T, name, dir string, port int, daemon bool, extra string) realUnit {
	t.Helper()
	prefix := filepath.Join(dir, name)
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;\n" // else the workers run as nobody, who cannot enter the test's 0700 directories
	}
	conf := filepath.Join(prefix, "nginx.conf")
	writeFile(t, conf, fmt.Sprintf(`%sworker_processes 2;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log;
events { worker_connections 64; }
http {
  access_log %[2]s/access.log;
  client_body_temp_path %[2]s/tmp/body;
  proxy_temp_path %[2]s/tmp/proxy;
  fastcgi_temp_path %[2]s/tmp/fastcgi;
  uwsgi_temp_path %[2]s/tmp/uwsgi;
  scgi_temp_path %[2]s/tmp/scgi;
  server { listen 127.0.0.1:%[3]d; }
}
`, user, prefix, port))
	if err := os.MkdirAll(filepath.Join(prefix, "tmp"), 0o700); err != nil {
		t.Fatal(err)
	}
	u := realUnit{name: name, needs: "nginx", program: program("nginx"), port: port, pidFile: filepath.Join(prefix, "nginx.pid"), workers: true}
	mode, typ := "daemon off;", ""
	if daemon {
		mode, typ = "daemon on;", "type: forking\n"
	}
	u.yaml = fmt.Sprintf("%scommand: [%q, -p, %q, -c, %q, -g, %q]\nready: {tcp: \"127.0.0.1:%d\"}\nports: [%d]\n%s",
		typ, u.program, prefix, conf, mode, port, port, extra)
	return u
}

// redisUnit is redis-server on port, without persistence: daemonizing
// with a pid file (type forking) or in the foreground (type simple).
func redisUnit(name, dir string, port int, daemon bool) realUnit {
	u := realUnit{name: name, needs: "redis-server", program: program("redis-server"), port: port}
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir}
	typ := ""
	if daemon {
		u.pidFile = filepath.Join(dir, name+".pid")
		args = append(args, "--daemonize", "yes", "--pidfile", u.pidFile, "--logfile", filepath.Join(dir, name+".log"))
		typ = fmt.Sprintf("type: forking\npid_file: %q\n", u.pidFile)
	} else {
		args = append(args, "--daemonize", "no")
	}
	argv := []string{strconv.Quote(u.program)}
	for _, a := range args {
		argv = append(argv, strconv.Quote(a))
	}
	u.yaml = fmt.Sprintf("%scommand: [%s]\nready: {tcp: \"127.0.0.1:%d\"}\nports: [%d]\n", typ, strings.Join(argv, ", "), port, port)
	return u
}

// realSuite writes the suite's unit files under dir (units/, one
// directory per program instance) and returns the units, those whose
// program is missing included (program "").
func realSuite(t *testing.T, mode, dir string, ports []int) []realUnit {
	t.Helper()
	python := program("python3")
	const keep = "ownership: adoptable\nreason: kept across hermesd's kill -9 in the test\n"
	nginxKept := nginxUnit(t, "nginx-kept", dir, ports[6], false, keep)
	nginxKept.kept = true
	redisKept := redisUnit("redis-kept", dir, ports[7], true)
	redisKept.yaml += keep
	redisKept.kept = true
	if mode == "pgroup" {
		redisKept.kept, redisKept.refused = false, "type: forking with ownership: adoptable needs cgroup mode"
	}
	suite := []realUnit{
		nginxUnit(t, "nginx-forking", dir, ports[0], true, ""),
		nginxUnit(t, "nginx-simple", dir, ports[1], false, ""),
		redisUnit("redis-forking", dir, ports[2], true),
		redisUnit("redis-simple", dir, ports[3], false),
		{name: "migrate", needs: "python3", program: python, oneshot: true, // needed by app only
			yaml: "type: oneshot\nshell: \"echo migrating; sleep 0.5; echo migrated\"\n"},
		{name: "app", needs: "python3", program: python, port: ports[4],
			yaml: fmt.Sprintf("command: [%q, -m, http.server, \"%d\", --bind, 127.0.0.1, --directory, %q]\nenv: {PYTHONUNBUFFERED: \"1\"}\nafter: [migrate]\nready: {tcp: \"127.0.0.1:%d\"}\nports: [%d]\n",
				python, ports[4], dir, ports[4], ports[4])},
		{name: "web-kept", needs: "python3", program: python, port: ports[5], kept: true,
			yaml: fmt.Sprintf("command: [%q, -m, http.server, \"%d\", --bind, 127.0.0.1, --directory, %q]\nready: {tcp: \"127.0.0.1:%d\"}\nports: [%d]\nownership: adoptable\nreason: kept across hermesd's kill -9 in the test\n",
				python, ports[5], dir, ports[5], ports[5])},
		nginxKept,
		redisKept,
	}
	for _, u := range suite {
		if u.program != "" {
			writeFile(t, filepath.Join(dir, "units", u.name+".yaml"), u.yaml)
		}
	}
	return suite
}

// suitePorts is how many ports one realSuite takes.
const suitePorts = 8

// TestRealPrograms runs the real-program suite in each supervisor mode,
// one gateway per mode, in parallel. For every unit: it reaches ready (the
// oneshot: done, and app spawned only after it); status shows the real
// main pid (the program's own pid file, and the holder of its listening
// socket); `stop` leaves none of its processes (by identity); started
// again, hermesd's kill -9 leaves none of the owned units' processes, while
// the adoptable one lives on and the next hermesd re-adopts it with the
// same pid and brings the owned units back; at the end nothing is left.
func TestRealPrograms(t *testing.T) {
	needsProcesses(t, "hermesd, nginx, redis-server and python3")
	ports := testkit.FreePorts(t, suitePorts*len(supervisorModes))
	for i, mode := range supervisorModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			needMode(t, mode)
			runRealSuite(t, mode, ports[i*suitePorts:(i+1)*suitePorts])
		})
	}
}

// runRealSuite is one mode's run of TestRealPrograms; its steps share one
// hermesd, and each waits for its condition with a deadline.
func runRealSuite(t *testing.T, mode string, ports []int) {
	dir := t.TempDir()
	var suite []realUnit
	for _, u := range realSuite(t, mode, dir, ports) {
		if u.program == "" {
			t.Run(u.name, func(t *testing.T) {
				t.Skipf("%s not found in PATH nor /usr/sbin: unit %s left out (.ci/run installs it from Debian)", u.needs, u.name)
			})
			continue
		}
		suite = append(suite, u)
	}
	if len(suite) == 0 {
		t.Skip("none of nginx, redis-server, python3 here")
	}
	d := startDaemonWith(t, dir, daemonOpts{role: "gateway", mode: mode})
	t.Cleanup(func() { // after the last hermesd's clean stop (cleanups run last in, first out)
		for _, ru := range suite {
			if !ru.kept {
				continue
			}
			for _, id := range copies(t, filepath.Join(dir, "state"), ru.name) { // a survivor a failed step left
				cg := ""
				if mode == "cgroup" {
					cg = filepath.Join(proc.CgroupMount(), proc.Cgroup(id.PID))
				}
				killSurvivor(t, id, cg)
			}
		}
		left := strays(dir, ports)
		for deadline := time.Now().Add(realDeadline); len(left) > 0 && !t.Failed() && time.Now().Before(deadline); left = strays(dir, ports) {
			time.Sleep(20 * time.Millisecond)
		}
		for _, id := range left {
			if !t.Failed() {
				args, _ := proc.Cmdline(id.PID)
				t.Errorf("process %d %q of the suite outlived the test", id.PID, args)
			}
			syscall.Kill(id.PID, syscall.SIGKILL) // not into the next test
		}
	})

	// 1. Ready, the real main pid, the oneshot before the app.
	u := waitSuite(d, suite)
	t.Logf("%s: status once ready:\n%s", mode, statusTable(d.fullStatus(), suite))
	for _, ru := range suite {
		checkMain(t, u[ru.name], ru)
	}
	if slices.ContainsFunc(suite, func(ru realUnit) bool { return ru.name == "app" }) {
		checkMigrateThenApp(t, d, u)
	}

	// 2. stop leaves no process; start brings each back.
	c := d.client()
	for _, ru := range suite {
		if ru.oneshot || ru.refused != "" {
			continue
		}
		ids := processesOf(t, u[ru.name], ru)
		if err := c.Stop(t.Context(), ru.name); err != nil {
			t.Fatalf("stop %s: %v", ru.name, err)
		}
		for _, id := range ids {
			if !goneWithin(id, realDeadline) {
				t.Errorf("%s: process %d still alive %v after stop returned", ru.name, id.PID, realDeadline)
			}
		}
		if err := c.Start(t.Context(), ru.name); err != nil {
			t.Fatalf("start %s: %v", ru.name, err)
		}
	}
	u = waitSuite(d, suite)

	// 3. kill -9 of hermesd: no owned process left; the adoptable one lives.
	owned, kept := map[string][]proc.Identity{}, map[string][]proc.Identity{}
	for _, ru := range suite {
		if ru.oneshot || ru.refused != "" {
			continue
		}
		ids := processesOf(t, u[ru.name], ru)
		if ru.kept {
			kept[ru.name] = ids
			killGroupAtEnd(t, ids[0])
		} else {
			owned[ru.name] = ids
		}
	}
	d.kill()
	for name, ids := range owned {
		for _, id := range ids {
			if !goneWithin(id, realDeadline) {
				t.Errorf("%s: process %d still alive %v after hermesd's kill -9", name, id.PID, realDeadline)
			}
		}
	}
	for name, ids := range kept { // looked at once the owned ones are gone: the supervisor is done
		for _, id := range ids {
			if !id.Alive() {
				t.Errorf("%s (adoptable): process %d died with hermesd; want it to survive", name, id.PID)
			}
		}
	}

	// 4. The next hermesd re-adopts the survivor, same pids, and starts the
	// owned units anew.
	d = startDaemonWith(t, dir, daemonOpts{role: "gateway", mode: mode})
	u = waitSuite(d, suite)
	t.Logf("%s: status after kill -9 and a new hermesd:\n%s", mode, statusTable(d.fullStatus(), suite))
	for _, ru := range suite {
		checkMain(t, u[ru.name], ru)
		if ru.oneshot || ru.refused != "" {
			continue
		}
		ids := processesOf(t, u[ru.name], ru)
		x := u[ru.name]
		switch {
		case ru.kept && (!x.Adopted || x.PID != kept[ru.name][0].PID):
			t.Errorf("%s after a new hermesd: pid %d adopted %v, want pid %d re-adopted", ru.name, x.PID, x.Adopted, kept[ru.name][0].PID)
		case ru.kept && !sameProcesses(ids, kept[ru.name]):
			t.Errorf("%s after a new hermesd: processes %v, want the survivors %v", ru.name, ids, kept[ru.name])
		case !ru.kept && (x.Adopted || x.PID == owned[ru.name][0].PID):
			t.Errorf("%s after a new hermesd: pid %d adopted %v, want a new process", ru.name, x.PID, x.Adopted)
		}
	}
	for name, ids := range kept {
		if err := d.client().Stop(t.Context(), name); err != nil {
			t.Fatalf("stop %s (re-adopted): %v", name, err)
		}
		for _, id := range ids {
			if !goneWithin(id, realDeadline) {
				t.Errorf("%s (re-adopted): process %d still alive after stop", name, id.PID)
			}
		}
	}
}

// waitSuite waits until every unit of suite is up: running and ready, a
// oneshot done.
func waitSuite(d *hermesd, suite []realUnit) map[string]control.Unit {
	d.t.Helper()
	return d.waitStatus("every unit ready", func(_ control.Status, u map[string]control.Unit) bool {
		for _, ru := range suite {
			x, ok := u[ru.name]
			switch {
			case ru.refused != "":
				if x.State != "failed" || !strings.Contains(x.Error, ru.refused) || x.PID != 0 {
					return false
				}
			case (ru.oneshot && x.State != "done") || (!ru.oneshot && (!running(x, ok) || !x.Ready)):
				return false
			}
		}
		return true
	})
}

// checkMain checks that status names the real main process of u: the pid
// the program wrote to its own pid file, and a holder of its listening
// socket, whose holders are all processes of the unit (one alone for a
// single-process server).
func checkMain(t *testing.T, u control.Unit, ru realUnit) {
	t.Helper()
	if ru.oneshot {
		return
	}
	if ru.refused != "" {
		if holders := listeners(ru.port); len(holders) > 0 {
			t.Errorf("%s: refused (%s), yet port %d is held by %v", ru.name, u.Error, ru.port, holders)
		}
		return
	}
	if ru.pidFile != "" {
		if got := pidInFile(t, ru.pidFile, u.PID); got != u.PID {
			t.Errorf("%s: status pid %d, want %d from the program's pid file %s", ru.name, u.PID, got, ru.pidFile)
		}
	}
	holders := listeners(ru.port)
	if !slices.Contains(holders, u.PID) {
		t.Errorf("%s: status pid %d does not hold the listener on port %d (held by %v)", ru.name, u.PID, ru.port, holders)
	}
	mine := unitProcesses(t, u, ru.workers)
	for _, h := range holders {
		if !slices.Contains(mine, h) {
			t.Errorf("%s: pid %d holds its port %d but is not one of its processes %v", ru.name, h, ru.port, mine)
		}
	}
	if !ru.workers && len(holders) != 1 {
		t.Errorf("%s: port %d held by %v, want its one process %d", ru.name, ru.port, holders, u.PID)
	}
}

// pidInFile reads the pid a program wrote to path, waiting (a daemon may
// write it after its socket listens) until it is want or the deadline
// passes; then it returns what the file holds.
func pidInFile(t *testing.T, path string, want int) int {
	t.Helper()
	deadline := time.Now().Add(realDeadline)
	for {
		b, err := os.ReadFile(path)
		pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
		if (err == nil && perr == nil && pid == want) || time.Now().After(deadline) {
			if err != nil {
				t.Errorf("pid file: %v", err)
			}
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// listeners returns the pids holding a socket that listens on port of
// this network namespace: the LISTEN sockets (state 0A) of /proc/net/tcp
// and tcp6, found among every process's descriptors.
func listeners(port int) []int {
	socks := map[string]bool{}
	hexPort := fmt.Sprintf("%04X", port)
	for _, table := range []string{"tcp", "tcp6"} {
		b, _ := os.ReadFile(filepath.Join(proc.Root, "net", table))
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" {
				continue
			}
			if _, p, _ := strings.Cut(f[1], ":"); p == hexPort {
				socks["socket:["+f[9]+"]"] = true
			}
		}
	}
	pids, _ := proc.Pids()
	var out []int
	for _, pid := range pids {
		fds, err := procfd.List(pid)
		if err == nil && slices.ContainsFunc(fds, func(fd procfd.FD) bool { return socks[fd.Target] }) {
			out = append(out, pid)
		}
	}
	return out
}

// strays lists the live processes of the suite in dir, whatever hermesd
// thinks of them: those whose command line names dir (nginx's prefix,
// http.server's directory), other than hermesd, and those holding one of
// its ports (redis, nginx's workers).
func strays(dir string, ports []int) []proc.Identity {
	pids := map[int]bool{}
	for _, port := range ports {
		for _, pid := range listeners(port) {
			pids[pid] = true
		}
	}
	all, _ := proc.Pids()
	for _, pid := range all {
		if a, err := proc.Cmdline(pid); err == nil && len(a) > 0 && a[0] != os.Args[0] && strings.Contains(strings.Join(a, " "), dir) {
			pids[pid] = true
		}
	}
	var out []proc.Identity
	for pid := range pids {
		if id, err := proc.Read(pid); err == nil && id.Alive() {
			out = append(out, id)
		}
	}
	return out
}

// processesOf is every live process of u (unitProcesses: its main
// process, what runs below it, its cgroup's members), by identity.
func processesOf(t *testing.T, u control.Unit, ru realUnit) []proc.Identity {
	t.Helper()
	var out []proc.Identity
	for _, pid := range unitProcesses(t, u, ru.workers) {
		if id, err := proc.Read(pid); err == nil {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no live process (status pid %d)", ru.name, u.PID)
	}
	return out
}

// sameProcesses reports whether a and b list the same identities, in any
// order.
func sameProcesses(a, b []proc.Identity) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(id proc.Identity) bool { return !slices.Contains(b, id) })
}

// checkMigrateThenApp checks that app was spawned only once migrate was
// done: in hermesd's event history (by seq) and in its log, whose lines
// give the timeline; migrate's own log shows it ran to its end.
func checkMigrateThenApp(t *testing.T, d *hermesd, u map[string]control.Unit) {
	t.Helper()
	var done, spawned uint64 // seqs: migrate → done; app's first event with a pid
	err := d.client().Events(t.Context(), control.EventOptions{}, func(e events.Event) error {
		switch {
		case e.Kind == events.UnitState && e.Unit == "migrate" && e.State == "done" && done == 0:
			done = e.Seq
		case e.Unit == "app" && e.PID != 0 && spawned == 0:
			spawned = e.Seq
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if done == 0 || spawned == 0 || spawned < done {
		t.Errorf("events: migrate done at seq %d, app's first pid at seq %d; want app after migrate", done, spawned)
	}
	if b, _ := os.ReadFile(u["migrate"].Log); !strings.Contains(logText(b), "migrating\nmigrated\n") {
		t.Errorf("migrate's log %s holds %q, want it to have run to its end", u["migrate"].Log, b)
	}
	log, err := os.ReadFile(filepath.Join(d.dir, "hermesd.log"))
	if err != nil {
		t.Fatal(err)
	}
	steps := []string{`msg="unit started" unit=migrate `, `msg="unit done" unit=migrate`, `msg="unit started" unit=app `, `msg="unit ready" unit=app `}
	var timeline []string
	at := 0
	lines := strings.Split(string(log), "\n")
	for _, step := range steps {
		i := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, step) })
		if i < at {
			t.Errorf("hermesd's log: %q at line %d, want it after line %d (steps %q)", step, i+1, at+1, steps)
			return
		}
		at = i
		timeline = append(timeline, lines[i])
	}
	t.Logf("migrate → app, from hermesd's log:\n  %s", strings.Join(timeline, "\n  "))
}

// statusTable is the suite's part of st as `hermesctl status` shows it,
// with the program behind each unit, for the test's log.
func statusTable(st control.Status, suite []realUnit) string {
	var b strings.Builder
	fmt.Fprintf(&b, "supervisor: pid %d, %d groups, mode %s, health %s\n", st.Supervisor.PID, st.Supervisor.Groups, st.Supervisor.Mode, st.Supervisor.Health)
	fmt.Fprintf(&b, "%-14s %-8s %-6s %-7s %-7s %-10s %-7s %s\n", "NAME", "STATE", "READY", "PID", "PGID", "OWNERSHIP", "ADOPTED", "PROGRAM")
	for _, x := range st.Units {
		i := slices.IndexFunc(suite, func(ru realUnit) bool { return ru.name == x.Name })
		if i < 0 {
			continue
		}
		fmt.Fprintf(&b, "%-14s %-8s %-6v %-7d %-7d %-10s %-7v %s\n", x.Name, x.State, x.Ready, x.PID, x.PGID, x.Ownership, x.Adopted, filepath.Base(suite[i].program))
	}
	return b.String()
}
