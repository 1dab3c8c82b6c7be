package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
)

// hermesd is a daemon under test: the test binary in role "hermesd".
type hermesd struct {
	t      *testing.T
	cmd    *exec.Cmd
	dir    string // holds units/, state/
	socket string
	done   chan error
}

// writeUnits writes one unit file per name→ownership.
func writeUnits(t *testing.T, dir string, units map[string]string) {
	t.Helper()
	files := map[string]string{}
	for name, own := range units {
		files[name+".yaml"] = fmt.Sprintf("command: [%q]\nenv: {%s: unit}\n", os.Args[0], roleEnv) + ownershipYAML(own)
	}
	testkit.WriteUnits(t, filepath.Join(dir, "units"), files)
}

// ownershipYAML is the ownership key of a unit file, with the reason a
// unit that outlives its owner must give.
func ownershipYAML(ownership string) string {
	y := "ownership: " + ownership + "\n"
	if ownership != "owned" {
		y += "reason: kept across gateway restarts in the test\n"
	}
	return y
}

// startEmpty runs a gateway hermesd on a fresh directory with no unit,
// and returns the directory too; under -short it skips the test.
func startEmpty(t *testing.T) (*hermesd, string) {
	t.Helper()
	needsProcesses(t, "hermesd processes")
	dir := t.TempDir()
	writeUnits(t, dir, nil)
	return startDaemon(t, dir, "gateway"), dir
}

// ledgerEntries are the entries of the ledger in state.
func ledgerEntries(t *testing.T, state string) []ledger.Entry {
	t.Helper()
	l, err := ledger.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	es, err := l.Entries(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// startDaemon runs hermesd on dir in role with no hermes.yaml (see
// startDaemonWith).
func startDaemon(t *testing.T, dir, role string) *hermesd {
	t.Helper()
	return startDaemonWith(t, dir, daemonOpts{role: role})
}

// daemonOpts is how tests' hermesd runs differ.
type daemonOpts struct {
	role      string     // --role; none when empty
	mode      string     // --supervisor-mode; automatic when empty
	config    string     // --config; dir/none.yaml (absent) when empty
	env       []string   // added to the test's environment
	inherited []*os.File // inherited as fd 3 on, not close-on-exec
	shell     string     // sh commands run before exec'ing hermesd in the same process ("ulimit -n 100")
	wrap      []string   // a command that runs hermesd, its path and flags appended ("unshare", "--pid", "--fork")
}

// startDaemonWith runs hermesd on dir and returns once it said READY=1 on
// the NOTIFY_SOCKET the test serves (a handshake: no polling).
func startDaemonWith(t *testing.T, dir string, o daemonOpts) *hermesd {
	t.Helper()
	d := &hermesd{t: t, dir: dir, socket: filepath.Join(dir, "state", "ctl.sock")}
	logPath := filepath.Join(dir, "hermesd.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	config := o.config
	if config == "" {
		config = filepath.Join(dir, "none.yaml")
	}
	args := []string{"--units", filepath.Join(dir, "units"), "--state", filepath.Join(dir, "state"),
		"--socket", d.socket, "--config", config}
	if o.role != "" {
		args = append(args, "--role", o.role)
	}
	if o.mode != "" {
		args = append(args, "--supervisor-mode", o.mode)
	}
	cmd := exec.Command(os.Args[0], args...)
	if o.shell != "" {
		cmd = exec.Command("/bin/sh", append([]string{"-c", o.shell + ` && exec "$0" "$@"`, os.Args[0]}, args...)...)
	}
	if len(o.wrap) > 0 {
		cmd = exec.Command(o.wrap[0], append(append(o.wrap[1:len(o.wrap):len(o.wrap)], os.Args[0]), args...)...)
	}
	cmd.Env = append(append(os.Environ(), roleEnv+"=hermesd"), o.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = o.inherited
	p, err := testkit.StartReady(t.Context(), cmd, 20*time.Second, logPath)
	if p != nil {
		d.cmd, d.done = p.Cmd, p.Done
		t.Cleanup(func() {
			if d.cmd.ProcessState == nil {
				d.cmd.Process.Signal(syscall.SIGTERM)
				<-d.done
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// status is the daemon's units (fullStatus), by name.
func (d *hermesd) status() map[string]control.Unit {
	d.t.Helper()
	out := map[string]control.Unit{}
	for _, u := range d.fullStatus().Units {
		out[u.Name] = u
	}
	return out
}

// answers says whether this hermesd, and no other, answers a status on
// its socket now.
func (d *hermesd) answers() bool {
	c, err := control.Dial(d.socket)
	if err != nil {
		return false
	}
	defer c.Close()
	st, err := c.Status(d.t.Context())
	return err == nil && st.Daemon.PID == d.cmd.Process.Pid
}

func (d *hermesd) kill() {
	d.t.Helper()
	d.cmd.Process.Kill()
	<-d.done
}

// identity of a unit's leader as the ledger recorded it. An owned spawn's
// record may trail its start by one journal flush (see
// supervisor.Owner.SpawnOwned), so this waits for it, with a deadline.
func leaderOf(t *testing.T, state, unit string) proc.Identity {
	t.Helper()
	l, err := ledger.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	var leader proc.Identity
	testkit.Eventually(t, 10*time.Second, "a ledger entry for "+unit, func() bool {
		es, err := l.Entries(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if e.Unit == unit {
				leader = e.Leader
				return true
			}
		}
		return false
	})
	return leader
}

// goneWithin polls (the kernel gives no event for another process's death
// that is not our child) until id is dead or d passes.
func goneWithin(id proc.Identity, d time.Duration) bool {
	return testkit.Within(d, func() bool { return !id.Alive() })
}

// killGroupAtEnd makes sure no survivor outlives the test.
func killGroupAtEnd(t *testing.T, id proc.Identity) {
	t.Cleanup(func() {
		if id.Alive() {
			syscall.Kill(-id.PID, syscall.SIGKILL)
		}
	})
}

// fileHas waits up to d for a log file to hold want.
func fileHas(path, want string, d time.Duration) bool {
	return testkit.WaitFile(path, regexp.MustCompile(regexp.QuoteMeta(want)), d) == nil
}

// TestGatewaySurvivors is the gateway rows of the survivors matrix (SPEC
// §3, §6, §11): hermesd is killed with SIGKILL; owned units die, adoptable
// and persist_on_release survive under a gateway and are re-adopted by the
// next one, same pid, log continuing in the same file; under a worker the
// adoptable job dies. A control hermesd on another state directory keeps its
// own owned unit alive throughout. Then the edges (edgeMatrix) and the
// families of owners in Python and Node (ownerFamilyMatrix), in each
// supervisor mode.
func TestGatewaySurvivors(t *testing.T) {
	needsProcesses(t, "hermesd processes")
	type row struct{ family, owner, expected, found string }
	var rows []row
	defer func() {
		t.Logf("%-66s %-8s %-26s %s", "family", "owner", "survivors expected", "found")
		for _, r := range rows {
			t.Logf("%-66s %-8s %-26s %s", r.family, r.owner, r.expected, r.found)
		}
	}()
	alive := func(id proc.Identity) string {
		if id.Alive() {
			return "alive"
		}
		return "gone"
	}

	// The control owner: never killed, its unit must stay alive.
	ctlDir := t.TempDir()
	writeUnits(t, ctlDir, map[string]string{"control": "owned"})
	ctl := startDaemon(t, ctlDir, "gateway")
	ctlUnit := leaderOf(t, filepath.Join(ctlDir, "state"), "control")

	// Gateway: owned, adoptable, persist.
	gwDir := t.TempDir()
	gwState := filepath.Join(gwDir, "state")
	writeUnits(t, gwDir, map[string]string{"owned": "owned", "job": "adoptable", "keep": "persist_on_release"})
	gw := startDaemon(t, gwDir, "gateway")
	before := gw.status()
	ids := map[string]proc.Identity{}
	for _, n := range []string{"owned", "job", "keep"} {
		ids[n] = leaderOf(t, gwState, n)
		killGroupAtEnd(t, ids[n])
		if before[n].PID != ids[n].PID || before[n].State != "running" {
			t.Fatalf("%s before the kill: %+v, want running with pid %d", n, before[n], ids[n].PID)
		}
	}
	gw.kill()
	ownedGone := goneWithin(ids["owned"], 5*time.Second)
	rows = append(rows,
		row{"gateway: owned unit", "gateway", "0 (dies)", alive(ids["owned"])},
		row{"gateway: adoptable job", "gateway", "1 (survives)", alive(ids["job"])},
		row{"gateway: persist_on_release", "gateway", "1 (survives)", alive(ids["keep"])},
		row{"control owner's unit (not killed)", "gateway", "1 (alive)", alive(ctlUnit)},
	)
	if !ownedGone {
		t.Errorf("owned unit pid %d still alive 5s after hermesd's SIGKILL", ids["owned"].PID)
	}
	for _, n := range []string{"job", "keep"} {
		if !ids[n].Alive() {
			t.Errorf("%s (pid %d) died with hermesd; want it to survive", n, ids[n].PID)
		}
	}
	if !ctlUnit.Alive() {
		t.Errorf("the control hermesd's unit died: the kill was not confined to one owner")
	}

	// A new gateway on the same state dir re-adopts job and keep.
	gw2 := startDaemon(t, gwDir, "gateway")
	after := gw2.status()
	for _, n := range []string{"job", "keep"} {
		u := after[n]
		ok := u.PID == ids[n].PID && u.Adopted && u.State == "running"
		rows = append(rows, row{"re-adopted after restart: " + n, "gateway", "same pid, adopted", fmt.Sprintf("pid %d adopted=%v %s", u.PID, u.Adopted, u.State)})
		if !ok {
			t.Errorf("%s after restart: pid %d adopted %v state %s, want pid %d adopted running", n, u.PID, u.Adopted, u.State, ids[n].PID)
		}
		if u.Log != before[n].Log {
			t.Errorf("%s log %s after restart, want the same file %s", n, u.Log, before[n].Log)
		}
	}
	if u := after["owned"]; u.PID == ids["owned"].PID || u.State != "running" {
		t.Errorf("owned after restart: pid %d state %s, want a new running process", u.PID, u.State)
	}
	// No duplicate spawn: one ledger entry per survivor.
	count := map[string]int{}
	for _, e := range ledgerEntries(t, gwState) {
		count[e.Unit]++
	}
	if count["job"] != 1 || count["keep"] != 1 {
		t.Errorf("ledger entries job=%d keep=%d, want 1 each (no duplicate spawn)", count["job"], count["keep"])
	}
	// The log continues in the same file: a line written now lands there,
	// after the line of the first start.
	syscall.Kill(ids["job"].PID, syscall.SIGUSR1)
	if err := testkit.WaitFile(after["job"].Log, regexp.MustCompile("ping 1"), 30*time.Second); err != nil {
		pid := ids["job"].PID
		out, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/1", pid))
		st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		t.Errorf("a line written after the restart is not there: %v\njob's stdout is %q; its status:\n%s", err, out, st)
	}
	if b, _ := os.ReadFile(after["job"].Log); !strings.Contains(string(b), fmt.Sprintf("started %d", ids["job"].PID)) {
		t.Errorf("%s lost the first run's lines", after["job"].Log)
	}
	rows = append(rows, row{"re-adopted log continues", "gateway", "same file", fmt.Sprintf("ping in %s", filepath.Base(after["job"].Log))})

	// Clean stop: owned gone, survivors alive and still in the ledger.
	owned2 := leaderOf(t, gwState, "owned")
	gw2.cmd.Process.Signal(syscall.SIGTERM)
	if err := <-gw2.done; err != nil {
		t.Errorf("hermesd after TERM: %v, want exit 0", err)
	}
	if owned2.Alive() {
		t.Errorf("owned unit pid %d alive after hermesd's clean stop", owned2.PID)
	}
	rows = append(rows, row{"clean stop (TERM): owned", "gateway", "0 (stopped)", alive(owned2)},
		row{"clean stop (TERM): job, keep", "gateway", "2 (left running)", alive(ids["job"]) + ", " + alive(ids["keep"])})
	if !ids["job"].Alive() || !ids["keep"].Alive() {
		t.Errorf("survivors after a clean stop: job %v keep %v, want both alive", ids["job"].Alive(), ids["keep"].Alive())
	}
	count = map[string]int{}
	for _, e := range ledgerEntries(t, gwState) {
		count[e.Unit]++
	}
	if count["job"] != 1 || count["keep"] != 1 || count["owned"] != 0 {
		t.Errorf("ledger after a clean stop: %v, want job and keep only", count)
	}

	// Worker: the adoptable job dies with its owner, persist survives.
	wDir := t.TempDir()
	wState := filepath.Join(wDir, "state")
	writeUnits(t, wDir, map[string]string{"job": "adoptable", "keep": "persist_on_release"})
	w := startDaemon(t, wDir, "worker")
	wjob, wkeep := leaderOf(t, wState, "job"), leaderOf(t, wState, "keep")
	killGroupAtEnd(t, wjob)
	killGroupAtEnd(t, wkeep)
	w.kill()
	wjobGone := goneWithin(wjob, 5*time.Second)
	rows = append(rows, row{"worker: adoptable job", "worker", "0 (dies)", alive(wjob)},
		row{"worker: persist_on_release", "worker", "1 (survives)", alive(wkeep)})
	if !wjobGone {
		t.Errorf("a worker's adoptable job (pid %d) survived its owner's SIGKILL", wjob.PID)
	}
	if !wkeep.Alive() {
		t.Errorf("a worker's persist_on_release unit died with its owner")
	}
	if !ctlUnit.Alive() {
		t.Errorf("the control hermesd's unit died")
	}
	_ = ctl

	// The edges (issue 10), in each supervisor mode.
	edgeMatrix(t, func(family, owner, expected, found string) {
		rows = append(rows, row{family, owner, expected, found})
	})

	// The seeds' families for owners in Python and Node (issue 25), in
	// each supervisor mode.
	ownerFamilyMatrix(t, func(family, owner, expected, found string) {
		rows = append(rows, row{family, owner, expected, found})
	})
}
