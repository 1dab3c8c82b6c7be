package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
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

// startExternal starts the test binary as a unit leading its own group, as
// something other than hermesd would, and returns once it said "started".
// The test's end kills the group, unless the test has reaped its leader.
func startExternal(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), roleEnv+"=unit")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := testkit.StartOutput(t, cmd)
	t.Cleanup(func() {
		if cmd.ProcessState == nil { // not reaped: the pgid is still the group's
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
		}
	})
	if line, err := out.ReadString('\n'); err != nil || !strings.HasPrefix(line, "started") {
		t.Fatalf("external unit did not start: %q %v", line, err)
	}
	return cmd
}

// external is startExternal's group leader, by identity.
func external(t *testing.T) proc.Identity {
	t.Helper()
	cmd := startExternal(t)
	id, err := proc.Read(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func (d *hermesd) client() *control.Client {
	d.t.Helper()
	c, err := control.Dial(d.socket)
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { c.Close() })
	return c
}

// groupEmptyWithin polls (no kernel event for a group's end) until pgid
// has no live member.
func groupEmptyWithin(pgid int, d time.Duration) bool {
	return testkit.Within(d, func() bool {
		m, err := proc.GroupMembers(pgid)
		return err == nil && len(m) == 0
	})
}

// TestAdopt: hermesd adopts an external group, refuses what it must,
// stops an adopted group with `stop`, and an adopted group dies with a
// SIGKILLed hermesd.
func TestAdopt(t *testing.T) {
	d, dir := startEmpty(t)
	state := filepath.Join(dir, "state")
	c := d.client()
	ctx := t.Context()

	ext := external(t)
	a, err := c.Adopt(ctx, control.AdoptRequest{PID: ext.PID, As: "ext"})
	if err != nil {
		t.Fatalf("adopt: %v", err)
	}
	if a.Unit != "ext" || a.PGID != ext.PID || a.PID != ext.PID {
		t.Errorf("adopt: got %+v, want unit ext, group and leader %d", a, ext.PID)
	}
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if u := unitNamed(st, "ext"); u == nil || !u.Adopted || u.State != "running" || u.PGID != ext.PID {
		t.Errorf("status after adopt: %+v, want ext adopted running in group %d", u, ext.PID)
	}
	if e := ledgerEntry(t, state, ext); e == nil || e.State != "adopted" || e.Owner.PID != d.cmd.Process.Pid {
		t.Errorf("ledger after adopt: %+v, want state adopted, owner %d", e, d.cmd.Process.Pid)
	}

	// Another live owner on the same ledger: its group is not ours to take.
	other, err := supervisor.New(supervisor.Options{StateDir: state, Role: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	oc, err := other.SpawnOwned(ctx, supervisor.Spec{Unit: "theirs", Argv: []string{os.Args[0]}, Env: append(os.Environ(), roleEnv+"=unit")})
	if err != nil {
		t.Fatal(err)
	}
	// The other owner's journal writes its record a little after the
	// spawn (group commit): the refusal by the ledger waits for the
	// record. Until then, and for an owner that keeps no ledger at all
	// (unrecorded, below), the leader's own evidence refuses it.
	if !testkit.Within(10*time.Second, func() bool { return ledgerEntry(t, state, oc.Leader) != nil }) {
		t.Fatal("the other owner's spawn is not in the ledger 10s after it")
	}
	unrecorded, err := supervisor.New(supervisor.Options{Role: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	defer unrecorded.Close()
	// Its environment erased: the refusal needs the leader's cgroup or mark.
	uc, err := unrecorded.SpawnOwned(ctx, supervisor.Spec{Unit: "unrecorded", Argv: []string{"env", "-i", os.Args[0]}, Env: append(os.Environ(), roleEnv+"=unit")})
	if err != nil {
		t.Fatal(err)
	}

	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		req  control.AdoptRequest
		want string
	}{
		{"pgid 1", control.AdoptRequest{PGID: 1}, "must be greater than 1"},
		{"hermesd's own group", control.AdoptRequest{PID: d.cmd.Process.Pid}, "hermesd's own group"},
		{"the supervisor's group", control.AdoptRequest{PGID: st.Supervisor.PID}, "death supervisor"},
		{"an exited process", control.AdoptRequest{PID: exited.Process.Pid}, "has already exited"},
		{"already owned", control.AdoptRequest{PGID: ext.PID}, "already owned by this hermesd, as unit ext"},
		{"another live owner's group", control.AdoptRequest{PGID: oc.PGID}, "belongs to unit theirs of another live owner"},
		{"another live owner's group, in no ledger", control.AdoptRequest{PGID: uc.PGID}, fmt.Sprintf("belongs to another live owner (pid %d)", os.Getpid())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Adopt(ctx, tc.req)
			if !errors.Is(err, control.ErrRefused) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("adopt %+v: got %v, want a refusal saying %q", tc.req, err, tc.want)
			}
		})
	}

	// stop: identity-checked signals, grace, KILL; returns once empty.
	if err := c.Stop(ctx, "ext"); err != nil {
		t.Fatalf("stop ext: %v", err)
	}
	if m, _ := proc.GroupMembers(ext.PID); len(m) != 0 {
		t.Errorf("group %d after stop: members %v, want none", ext.PID, m)
	}
	if st, _ := c.Status(ctx); unitNamed(st, "ext") != nil {
		t.Errorf("ext still in status after its group was stopped")
	}

	// SIGKILL of hermesd kills what it adopted, through the supervisor.
	ext2 := external(t)
	if _, err := c.Adopt(ctx, control.AdoptRequest{PGID: ext2.PID}); err != nil {
		t.Fatalf("adopt: %v", err)
	}
	d.kill()
	if !groupEmptyWithin(ext2.PID, 10*time.Second) {
		t.Errorf("adopted group %d still has members 10s after hermesd's SIGKILL", ext2.PID)
	}
	if !oc.Leader.Alive() {
		t.Errorf("the other owner's unit died with hermesd")
	}
}

// TestMorningAfter is the story of SPEC §1: a gateway and its supervisor
// are killed with SIGKILL (pkill -9 -f hermes), its owned unit lives on with
// its port; the next hermesd finds it with `adopt --orphans` (evidence:
// identity, re-parenting, dead owner, port), adopts it with --yes, and a
// SIGKILL of that hermesd then empties the group.
func TestMorningAfter(t *testing.T) {
	needsProcesses(t, "hermesd processes")
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	y := fmt.Sprintf("command: [%q]\nenv: {%s: unit, HERMESD_TEST_LISTEN: \"127.0.0.1:%d\"}\n", os.Args[0], roleEnv, port)
	testkit.WriteUnits(t, filepath.Join(dir, "units"), map[string]string{"web.yaml": y})
	gw := startDaemon(t, dir, "gateway")
	web := leaderOf(t, state, "web")
	killGroupAtEnd(t, web)
	if !fileHas(filepath.Join(state, "logs", "web.log"), fmt.Sprintf("started %d", web.PID), 10*time.Second) {
		t.Fatalf("web did not start listening")
	}
	// pkill -9 -f hermes: hermesd cannot restart its supervisor while stopped.
	gw.killWithSupervisor()
	if !web.Alive() {
		t.Fatal("web died with its owner and supervisor; the story needs a leftover")
	}

	// The next morning: a new hermesd, web no longer declared.
	os.Remove(filepath.Join(dir, "units", "web.yaml"))
	d := startDaemon(t, dir, "gateway")
	c := d.client()
	rep, err := c.Orphans(t.Context(), control.OrphansRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Orphans) != 1 || len(rep.Adopted) != 0 {
		t.Fatalf("orphans: got %+v, want web alone, nothing adopted", rep)
	}
	o := rep.Orphans[0]
	ev := strings.Join(o.Evidence, "\n")
	for _, want := range []string{
		fmt.Sprintf("identity matches: pid %d still has start time %d", web.PID, web.StartTime),
		fmt.Sprintf("owner pid %d (gateway) is gone", gw.cmd.Process.Pid),
		fmt.Sprintf("holds port %d", port),
		"re-parented",
	} {
		if !strings.Contains(ev, want) {
			t.Errorf("evidence %q lacks %q", o.Evidence, want)
		}
	}
	if o.Unit != "web" || o.PGID != web.PID || !o.Adoptable {
		t.Errorf("orphan: %+v, want web, group %d, adoptable", o, web.PID)
	}
	rep, err = c.Orphans(t.Context(), control.OrphansRequest{Adopt: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Adopted) != 1 || rep.Adopted[0].Unit != "web" || rep.Adopted[0].PGID != web.PID {
		t.Fatalf("orphans --yes: adopted %+v, want web in group %d", rep.Adopted, web.PID)
	}
	st, _ := c.Status(t.Context())
	if u := unitNamed(st, "web"); u == nil || !u.Adopted || u.State != "running" {
		t.Errorf("status after adopt --orphans --yes: %+v, want web adopted and running", u)
	}
	if rep, _ := c.Orphans(t.Context(), control.OrphansRequest{}); len(rep.Orphans) != 0 {
		t.Errorf("orphans after adopting: %+v, want none", rep.Orphans)
	}
	d.kill()
	if !groupEmptyWithin(web.PID, 10*time.Second) {
		t.Errorf("web's group %d still has members 10s after the new hermesd's SIGKILL", web.PID)
	}
}

// TestRelease: a released owned unit outlives hermesd's SIGKILL, is shown
// released, and is not started again beside itself.
func TestRelease(t *testing.T) {
	needsProcesses(t, "hermesd processes")
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	writeUnits(t, dir, map[string]string{"web": "owned"})
	d := startDaemon(t, dir, "gateway")
	c := d.client()
	web := leaderOf(t, state, "web")
	killGroupAtEnd(t, web)
	r, err := c.Release(t.Context(), "web")
	if err != nil {
		t.Fatal(err)
	}
	if r.PGID != web.PID {
		t.Errorf("release: got %+v, want group %d", r, web.PID)
	}
	st, _ := c.Status(t.Context())
	var released bool
	for _, u := range st.Units {
		if u.Name == "web" && u.State == "released" && u.PGID == web.PID {
			released = true
		}
	}
	if !released {
		t.Errorf("status after release: %+v, want a released row for web", st.Units)
	}
	if e := ledgerEntry(t, state, web); e == nil || e.State != "released" {
		t.Errorf("ledger after release: %+v, want state released", e)
	}
	err = c.Start(t.Context(), "web")
	if !errors.Is(err, control.ErrConflict) || !strings.Contains(err.Error(), "released group") {
		t.Errorf("start of a released unit whose group runs: got %v, want a conflict naming the released group", err)
	}
	if _, err := c.Release(t.Context(), "web"); !errors.Is(err, control.ErrRefused) {
		t.Errorf("second release: got %v, want refused", err)
	}
	d.kill()
	if goneWithin(web, 2*time.Second) { // the supervisor TERMs at once at EOF: a kill would be done by then
		t.Fatalf("released web died with hermesd")
	}
	// The next gateway lists it as released and does not re-adopt it.
	d2 := startDaemon(t, dir, "gateway")
	st, _ = d2.client().Status(t.Context())
	for _, u := range st.Units {
		if u.PID == web.PID && u.State != "released" {
			t.Errorf("next gateway shows the released group as %+v, want released", u)
		}
	}
	syscall.Kill(-web.PID, syscall.SIGKILL)
}

func unitNamed(st control.Status, name string) *control.Unit {
	for i := range st.Units {
		if st.Units[i].Name == name {
			return &st.Units[i]
		}
	}
	return nil
}

func ledgerEntry(t *testing.T, state string, id proc.Identity) *ledger.Entry {
	t.Helper()
	es := ledgerEntries(t, state)
	for i := range es {
		if es[i].Leader.PID == id.PID && es[i].Leader.StartTime == id.StartTime {
			return &es[i]
		}
	}
	return nil
}
