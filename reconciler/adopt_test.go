package reconciler

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/diag"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
)

// groupLeader starts `sleep` leading its own group (as uid when cred is
// set); the group is killed at the end of the test.
func groupLeader(t *testing.T, cred *syscall.Credential) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	return cmd
}

// TestVetGroupRefusals covers each refusal of adopt, with the reason in
// the error, and the groups that pass.
func TestVetGroupRefusals(t *testing.T) {
	self := guards{selfPID: os.Getpid(), selfPGID: syscall.Getpgrp(), uid: os.Geteuid()}
	leader := groupLeader(t, nil)
	pgid := leader.Process.Pid
	exited := groupLeader(t, nil)
	exited.Process.Kill()
	exited.Wait()

	withSupervisor := self
	withSupervisor.supervisorPID = pgid
	withCaller := self
	withCaller.callerPGID = pgid
	asOtherUser := self
	asOtherUser.uid = 65534 // hermesd as nobody; the sleep runs as our uid
	if os.Geteuid() == 65534 {
		asOtherUser.uid = 65533
	}

	for _, tc := range []struct {
		name      string
		pid, pgid int
		gd        guards
		want      string // "" = accepted
	}{
		{"pgid 0", 0, -1, self, "pgid -1: a group id must be greater than 1"},
		{"pgid 1", 0, 1, self, "pgid 1: a group id must be greater than 1"},
		{"pid 1 (init's group)", 1, 0, self, ": a group id must be greater than 1"},
		{"hermesd's own group", os.Getpid(), 0, self, "is hermesd's own group"},
		{"supervisor's group", 0, pgid, withSupervisor, "is hermesd's death supervisor"},
		{"caller's group", 0, pgid, withCaller, "is your own (the group of the hermesctl that asked)"},
		{"another user's process", pgid, 0, asOtherUser, "belongs to uid"},
		{"exited process", exited.Process.Pid, 0, self, "has already exited"},
		{"exited group", 0, exited.Process.Pid, self, "has no live process: it has already exited"},
		{"by pid", pgid, 0, self, ""},
		{"by pgid", 0, pgid, self, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := vetGroup(tc.pid, tc.pgid, tc.gd)
			if tc.want == "" {
				if err != nil || g.PGID != pgid || g.Leader.PID != pgid || g.Leader.StartTime == 0 {
					t.Fatalf("vetGroup: got %+v, %v; want group %d led by %d", g, err, pgid, pgid)
				}
				return
			}
			if !errors.Is(err, control.ErrRefused) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("vetGroup: got %v, want a refusal saying %q", err, tc.want)
			}
		})
	}
}

// TestVetGroupRootAdoptsOthers: as root, another user's process passes the
// uid check (root may steer anyone's); skipped when not root, since a
// process of another uid cannot be started.
func TestVetGroupRootAdoptsOthers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to start a process as uid 65534")
	}
	cmd := groupLeader(t, &syscall.Credential{Uid: 65534, Gid: 65534})
	gd := guards{selfPID: os.Getpid(), selfPGID: syscall.Getpgrp(), uid: 0}
	if _, err := vetGroup(cmd.Process.Pid, 0, gd); err != nil {
		t.Errorf("root adopting uid 65534's process: %v, want accepted", err)
	}
	gd.uid = 1000 // a non-root hermesd meets nobody's process
	if _, err := vetGroup(cmd.Process.Pid, 0, gd); !errors.Is(err, control.ErrRefused) {
		t.Errorf("uid 1000 adopting uid 65534's process: %v, want refused", err)
	}
}

func TestDerivedName(t *testing.T) {
	cmd := groupLeader(t, nil)
	g, err := vetGroup(cmd.Process.Pid, 0, guards{uid: os.Geteuid()})
	if err != nil {
		t.Fatal(err)
	}
	want := "sleep-" + strconv.Itoa(g.PGID)
	if got := derivedName(g); got != want {
		t.Errorf("derivedName: got %q, want %q", got, want)
	}
	for name, ok := range map[string]bool{"web": true, "llama-server-4242": true, "a@b.c_d": true, "": false, "-x": false, "a/b": false, "a b": false} {
		if validName().MatchString(name) != ok {
			t.Errorf("validName(%q): got %v, want %v", name, !ok, ok)
		}
	}
}

// TestPortsOf: the ports a group holds are found from its fds.
func TestPortsOf(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	got := portsOf([]int{os.Getpid()}, listeningPorts())
	if !slices.Contains(got, port) {
		t.Errorf("portsOf(self): got %v, want it to hold %d", got, port)
	}
	if got := portsOf([]int{os.Getpid()}, map[uint64]int{}); len(got) != 0 {
		t.Errorf("portsOf with no listeners: got %v, want none", got)
	}
}

// TestVetGroupRefusesAncestors: a group that holds an ancestor of the
// hermesctl that asked (the shell that ran it, in a group of its own under
// job control) or of hermesd is refused, with the ancestor named.
func TestVetGroupRefusesAncestors(t *testing.T) {
	// shell leads its group; its child "hermesctl" runs in another one.
	shell := exec.Command("/bin/sh", "-c", "setsid sleep 1000 & echo $!; wait")
	shell.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := shell.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := shell.Start(); err != nil {
		t.Fatal(err)
	}
	var caller int
	if _, err := fmt.Fscan(out, &caller); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-caller, syscall.SIGKILL)
		syscall.Kill(-shell.Process.Pid, syscall.SIGKILL)
		shell.Wait()
	})
	// Wait (polling /proc: no event for another process's exec) until the
	// process of pid caller is the sleep, in a session of its own.
	testkit.EventuallyOK(t, 10*time.Second, func() error {
		st, err := proc.ReadStat(caller)
		if err == nil && st.SID == caller && st.Comm == "sleep" {
			return nil
		}
		return fmt.Errorf("pid %d is not a setsid sleep: %+v %v", caller, st, err)
	})

	r := &Reconciler{}
	gd := r.guards(control.AdoptRequest{CallerPID: caller})
	_, err = vetGroup(0, shell.Process.Pid, gd)
	want := fmt.Sprintf("group %d holds pid %d (sh), an ancestor of the hermesctl that asked", shell.Process.Pid, shell.Process.Pid)
	if !errors.Is(err, control.ErrRefused) || !strings.Contains(err.Error(), want) {
		t.Errorf("vetGroup(the caller's parent's group): got %v, want a refusal saying %q", err, want)
	}
	if _, err := vetGroup(0, caller, gd); err != nil {
		t.Errorf("vetGroup(the caller's own group, no ancestor in it): %v, want accepted here (the server refuses it as the caller's group)", err)
	}

	// hermesd's ancestors are guarded too: here the test process plays
	// hermesd, and its parent is listed.
	var found bool
	for _, a := range gd.ancestors {
		found = found || a.pid == os.Getppid() && a.of == "hermesd"
	}
	if !found {
		t.Errorf("ancestors %+v do not list hermesd's parent %d", gd.ancestors, os.Getppid())
	}
}

// TestRefusalsSayTheFixApart: an adopt refusal that has something to do
// about it carries that apart from what happened (diag.Split gives it as
// the detail, which hermesctl prints below the summary); its text and its
// kind (ErrRefused) are as before.
func TestRefusalsSayTheFixApart(t *testing.T) {
	gd := guards{selfPID: 10, selfPGID: 10, callerPGID: 42,
		ancestors: []ancestor{{pid: 77, pgid: 77, comm: "bash", of: "the hermesctl that asked"}}}
	tests := []struct {
		pgid               int
		summary, detail    string
		alsoInWholeMessage string
	}{
		{10, "group 10 is hermesd's own group: refused", "", ""},
		{42, "group 42 is your own (the group of the hermesctl that asked): it would die with hermesd: refused",
			"start the program in a group of its own (setsid) or adopt it from another shell",
			"it would die with hermesd; start the program"},
		{77, "group 77 holds pid 77 (bash), an ancestor of the hermesctl that asked: adopted, it would be killed when hermesd dies, and your terminal with it: refused",
			"adopt the program's own group instead (start it with setsid)",
			"your terminal with it; adopt the program's own group"},
	}
	for _, tt := range tests {
		err := gd.check(tt.pgid)
		if !errors.Is(err, control.ErrRefused) {
			t.Errorf("check(%d) = %v, want a refusal", tt.pgid, err)
			continue
		}
		sum, det := diag.Split(err)
		if sum != tt.summary || det != tt.detail {
			t.Errorf("check(%d): summary %q detail %q;\nwant %q and %q", tt.pgid, sum, det, tt.summary, tt.detail)
		}
		if !strings.Contains(err.Error(), tt.alsoInWholeMessage) {
			t.Errorf("check(%d): %q does not say %q", tt.pgid, err, tt.alsoInWholeMessage)
		}
	}
}
