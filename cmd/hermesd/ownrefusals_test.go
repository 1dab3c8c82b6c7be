package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
)

// The refusals of the keeper's own (issue 25, point 2): each says why, and
// changes nothing: no group is kept, and the groups named live on.

// The "own" role of the test binary asks hermesd (HERMESD_TEST_SOCKET) to
// keep groups (HERMESD_TEST_OWN, an OwnRequest in JSON), from a process
// group of its own with HERMESD_TEST_SETPGID set, and prints the answer as
// one JSON line: ownAnswer.
const (
	envOwnSocket = "HERMESD_TEST_SOCKET"
	envOwnReq    = "HERMESD_TEST_OWN"
	envOwnPgrp   = "HERMESD_TEST_SETPGID"
)

type ownAnswer struct {
	Groups []control.OwnedGroup `json:"groups"`
	Error  string               `json:"error"`
}

func playOwn() {
	if os.Getenv(envOwnPgrp) != "" {
		if err := syscall.Setpgid(0, 0); err != nil {
			fmt.Fprintln(os.Stderr, "setpgid:", err)
			os.Exit(2)
		}
	}
	var req control.OwnRequest
	if err := json.Unmarshal([]byte(os.Getenv(envOwnReq)), &req); err != nil {
		fmt.Fprintln(os.Stderr, "request:", err)
		os.Exit(2)
	}
	var ans ownAnswer
	c, err := control.Dial(os.Getenv(envOwnSocket))
	if err == nil {
		var res control.OwnedGroups
		res, err = c.Own(context.Background(), req)
		ans.Groups = res.Groups
		c.Close()
	}
	if err != nil {
		ans.Error = err.Error()
	}
	json.NewEncoder(os.Stdout).Encode(ans)
	os.Exit(0)
}

// ownAs runs the "own" role with req on socket, as cred when not nil, and
// returns its answer. Through wrap (a command its path and arguments are
// appended to), its parent is another process.
func ownAs(t *testing.T, bin, socket string, req control.OwnRequest, cred *syscall.Credential, wrap ...string) ownAnswer {
	t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	argv := append(wrap[:len(wrap):len(wrap)], bin, "-test.run=^$")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), roleEnv+"=own", envOwnSocket+"="+socket, envOwnReq+"="+string(body), envOwnPgrp+"=1",
		"GORACE=atexit_sleep_ms=0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ans ownAnswer
	if err != nil || json.Unmarshal(out, &ans) != nil {
		t.Fatalf("the own helper: %v; it said %q, %s", err, out, stderr.String())
	}
	return ans
}

// groupOf starts a sleep leading a group of its own (as cred when not
// nil), killed at the test's end.
func groupOf(t *testing.T, cred *syscall.Credential) proc.Identity {
	t.Helper()
	cmd := exec.Command("sleep", "3000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	return testkit.StartIdentified(t, cmd)
}

// sharedBinary copies the test binary where another uid may run it (the go
// tool's build directory is private to the user that built it).
func sharedBinary(t *testing.T) string {
	t.Helper()
	dir := sharedDir(t, 0)
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	bin := filepath.Join(dir, "hermesd.test")
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return bin
}

// sharedDir is a fresh directory outside the test's private temporary
// one, mode 0755, owned by uid, removed at the end.
func sharedDir(t *testing.T, uid int) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hermes-own")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, uid); err != nil {
		t.Fatal(err)
	}
	return dir
}

// keptPGIDs are the groups hermesd keeps, by pgid.
func keptPGIDs(d *hermesd) []int {
	var out []int
	for _, g := range d.fullStatus().Owned {
		out = append(out, g.PGID)
	}
	slices.Sort(out)
	return out
}

// refused checks a refusal: err wraps ErrRefused (or, with bad, is a bad
// request) and says want; and nothing changed: d keeps what it kept
// before, and each of alive still runs.
func refused(t *testing.T, d *hermesd, before []int, err error, want string, alive ...proc.Identity) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("accepted, want a refusal saying %q", want)
	case !strings.Contains(err.Error(), want):
		t.Errorf("refused with %q, want it to say %q", err, want)
	}
	if got := keptPGIDs(d); !slices.Equal(got, before) {
		t.Errorf("kept groups %v after the refusal, want %v as before", got, before)
	}
	for _, id := range alive {
		if !id.Alive() {
			t.Errorf("process %d, named in a refused request, is gone", id.PID)
		}
	}
}

// TestOwnRefusals: pgid ≤ 1, init as owner, hermesd's group, its death
// supervisor's, a group holding an ancestor of the caller or of hermesd,
// a group kept already, a persist_on_release group without a reason: each
// is refused with its reason, and nothing changes.
func TestOwnRefusals(t *testing.T) {
	needsProcesses(t, "hermesd processes")
	// hermesd in a session of its own, below a shell that leads a session
	// of its own: that shell's group holds an ancestor of hermesd.
	dir := t.TempDir()
	writeUnits(t, dir, nil)
	d := startDaemonWith(t, dir, daemonOpts{role: "gateway", mode: "pgroup", wrap: []string{"setsid", "/bin/sh", "-c", `setsid "$0" "$@"; exit $?`}})
	st := d.fullStatus()
	hermesdPID := st.Daemon.PID
	t.Cleanup(func() { d.stopWrapped(hermesdPID) })
	if hermesdPID == d.cmd.Process.Pid {
		t.Fatalf("hermesd runs as the wrapping shell's process: no ancestor of its own")
	}
	c := d.client()
	ctx := t.Context()
	victim := groupOf(t, nil)
	kept := groupOf(t, nil)
	if _, err := c.Own(ctx, control.OwnRequest{PGIDs: []int{kept.PID}}); err != nil {
		t.Fatalf("own a plain group: %v", err)
	}
	st = d.fullStatus()
	if st.Supervisor.PID == 0 {
		t.Fatalf("no death supervisor runs with a group kept")
	}
	shell := testkit.Identity(t, d.cmd.Process.Pid)
	hermesd := testkit.Identity(t, hermesdPID)
	sup := testkit.Identity(t, st.Supervisor.PID)
	before := keptPGIDs(d)
	for _, tc := range []struct {
		name string
		req  control.OwnRequest
		want string
	}{
		{"pgid 1", control.OwnRequest{PGIDs: []int{1}}, "pgid 1: a group id must be greater than 1"},
		{"pgid 0", control.OwnRequest{PGIDs: []int{0}}, "pgid 0: a group id must be greater than 1"},
		{"negative pgid", control.OwnRequest{PGIDs: []int{-victim.PID}}, "a group id must be greater than 1"},
		{"no group", control.OwnRequest{}, "name at least one process group"},
		{"init as owner", control.OwnRequest{PGIDs: []int{victim.PID}, Owner: 1}, "owner pid 1: the owner must be a live process of yours, other than init"},
		{"hermesd's group", control.OwnRequest{PGIDs: []int{hermesdPID}}, fmt.Sprintf("group %d holds hermesd's own group", hermesdPID)},
		{"the supervisor's group", control.OwnRequest{PGIDs: []int{sup.PID}}, fmt.Sprintf("group %d holds hermesd's death supervisor", sup.PID)},
		{"an ancestor of hermesd", control.OwnRequest{PGIDs: []int{shell.PID}}, fmt.Sprintf("group %d holds pid %d (sh), an ancestor of hermesd", shell.PID, shell.PID)},
		{"kept already, with another", control.OwnRequest{PGIDs: []int{victim.PID, kept.PID}}, fmt.Sprintf("group %d is kept already", kept.PID)},
		{"persist_on_release without a reason", control.OwnRequest{PGIDs: []int{victim.PID}, Ownership: "persist_on_release", Reason: " "}, "needs a written reason"},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			_, err := c.Own(ctx, tc.req)
			refused(t, d, before, err, tc.want, victim, kept, shell, hermesd, sup)
		})
	}
	t.Run("an_ancestor_of_the_caller", func(t *testing.T) {
		// The caller's parent leads a group of its own; the caller, in
		// another group, names its parent's.
		bin := sharedBinary(t)
		ans := ownAs(t, bin, d.socket, control.OwnRequest{}, nil, "/bin/sh", "-c", `HERMESD_TEST_OWN="{\"pgids\": [$$]}" "$0" "$@"; exit $?`)
		refused(t, d, before, errorOf(ans), "an ancestor of the caller", victim, kept)
		if !strings.Contains(ans.Error, "(sh), an ancestor of the caller") {
			t.Errorf("the refusal does not name the caller's parent, the shell: %q", ans.Error)
		}
	})
}

// errorOf is the error an own helper reported, nil when it was accepted.
func errorOf(a ownAnswer) error {
	if a.Error == "" {
		return nil
	}
	return fmt.Errorf("%s", a.Error)
}

// stopWrapped stops a hermesd started below a wrapping process (pid, not
// d.cmd's): TERM (KILL after 20s), and waits for the wrapper to end; its
// exit is put back for startDaemonWith's cleanup, which then finds it done.
func (d *hermesd) stopWrapped(pid int) {
	if id, err := proc.Read(pid); err == nil && pid > 1 {
		syscall.Kill(id.PID, syscall.SIGTERM)
		if !goneWithin(id, 20*time.Second) {
			syscall.Kill(id.PID, syscall.SIGKILL)
		}
	}
	err := <-d.done
	d.done <- err
}

// TestOwnDeadOwner: an owner already dead is refused, and the group handed
// over for it is stopped at once, never left running.
func TestOwnDeadOwner(t *testing.T) {
	d, _ := startEmpty(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	g := groupOf(t, nil)
	other := groupOf(t, nil)
	_, err := d.client().Own(t.Context(), control.OwnRequest{PGIDs: []int{g.PID}, Owner: dead.Process.Pid})
	want := fmt.Sprintf("owner pid %d has already exited", dead.Process.Pid)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("own for a dead owner: %v, want a refusal saying %q", err, want)
	}
	if !goneWithin(g, 20*time.Second) {
		t.Errorf("the group handed over for a dead owner (pgid %d) still runs", g.PID)
	}
	if got := keptPGIDs(d); len(got) != 0 {
		t.Errorf("kept groups %v, want none", got)
	}
	if !other.Alive() {
		t.Errorf("a group nobody named (pgid %d) was stopped", other.PID)
	}
}

// TestOwnOtherUsers: the groups and owners of another user (issue 25,
// point 2). hermesd as root admits root and no other user: a client of
// uid 65534 asking to own a root group is turned away at the door. A
// user's hermesd (uid 65534) admits root too, but keeps that user's
// groups for that user's processes only: root asking it to own a root
// group, or to keep its user's group for a root owner, is refused. So
// does root's hermesd asked by root: the verbs are for processes of the
// daemon's own user, root's included, and a group or an owner of another
// user is refused.
func TestOwnOtherUsers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run processes as uid 65534; as another user the same checks run against that user's hermesd only")
	}
	needsProcesses(t, "hermesd processes")
	const nobody = 65534
	asNobody := &syscall.Credential{Uid: nobody, Gid: nobody}
	bin := sharedBinary(t)

	t.Run("root's hermesd", func(t *testing.T) {
		d, dir := startEmpty(t)
		// Opened up for this test only, so that the peer check is the one
		// fence left: otherwise the kernel refuses the connect itself.
		for p, mode := range map[string]os.FileMode{filepath.Dir(dir): 0o755, dir: 0o755, filepath.Dir(d.socket): 0o755, d.socket: 0o666} {
			if err := os.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
		}
		rootGroup := groupOf(t, nil)
		nobodysGroup := groupOf(t, asNobody)
		before := keptPGIDs(d)
		ans := ownAs(t, bin, d.socket, control.OwnRequest{PGIDs: []int{rootGroup.PID}}, asNobody)
		refused(t, d, before, errorOf(ans), "permission denied: uid 65534 may not steer this hermesd", rootGroup)
		ans = ownAs(t, bin, d.socket, control.OwnRequest{PGIDs: []int{nobodysGroup.PID}}, asNobody)
		refused(t, d, before, errorOf(ans), "permission denied: uid 65534 may not steer this hermesd", nobodysGroup)
		// Root asks root's hermesd for another user's group, or for its own
		// group for another user's process: refused.
		_, err := d.client().Own(t.Context(), control.OwnRequest{PGIDs: []int{nobodysGroup.PID}})
		refused(t, d, before, err, fmt.Sprintf("process %d of group %d belongs to uid %d; hermesd keeps groups of uid 0 only", nobodysGroup.PID, nobodysGroup.PID, nobody), nobodysGroup)
		nobodysOwner := groupOf(t, asNobody)
		_, err = d.client().Own(t.Context(), control.OwnRequest{PGIDs: []int{rootGroup.PID}, Owner: nobodysOwner.PID})
		refused(t, d, before, err, fmt.Sprintf("owner pid %d belongs to uid %d; hermesd runs as uid 0", nobodysOwner.PID, nobody), rootGroup, nobodysOwner)
		// Root's own group for root: accepted.
		if _, err := d.client().Own(t.Context(), control.OwnRequest{PGIDs: []int{rootGroup.PID}}); err != nil {
			t.Errorf("root asking root's hermesd to own root's group: %v, want accepted", err)
		}
	})

	t.Run("a user's hermesd", func(t *testing.T) {
		d := startAsUser(t, bin, nobody)
		c := d.client()
		rootGroup := groupOf(t, nil)
		nobodysGroup := groupOf(t, asNobody)
		nobodysOwner := groupOf(t, asNobody)
		before := keptPGIDs(d)
		_, err := c.Own(t.Context(), control.OwnRequest{PGIDs: []int{rootGroup.PID}, Owner: nobodysOwner.PID})
		refused(t, d, before, err, fmt.Sprintf("process %d of group %d belongs to uid 0; hermesd keeps groups of uid %d only", rootGroup.PID, rootGroup.PID, nobody),
			rootGroup, nobodysOwner)
		_, err = c.Own(t.Context(), control.OwnRequest{PGIDs: []int{nobodysGroup.PID}})
		refused(t, d, before, err, fmt.Sprintf("owner pid %d belongs to uid 0; hermesd runs as uid %d", os.Getpid(), nobody), nobodysGroup)
		_, err = c.Own(t.Context(), control.OwnRequest{PGIDs: []int{nobodysGroup.PID, rootGroup.PID}, Owner: nobodysOwner.PID})
		refused(t, d, before, err, "belongs to uid 0", nobodysGroup, rootGroup)
		// The user's own group for the user's own process: accepted.
		if _, err := c.Own(t.Context(), control.OwnRequest{PGIDs: []int{nobodysGroup.PID}, Owner: nobodysOwner.PID}); err != nil {
			t.Errorf("own uid %d's group for uid %d's process: %v, want accepted", nobody, nobody, err)
		}
		if got := keptPGIDs(d); !slices.Equal(got, []int{nobodysGroup.PID}) {
			t.Errorf("kept %v, want [%d]", got, nobodysGroup.PID)
		}
	})
}

// startAsUser runs hermesd (bin, a copy of the test binary) as uid, on
// directories of that user, in pgroup mode (a user cannot write the
// cgroup hierarchy), and waits until it answers on its socket.
func startAsUser(t *testing.T, bin string, uid int) *hermesd {
	t.Helper()
	dir := sharedDir(t, uid)
	units := filepath.Join(dir, "units")
	if err := os.Mkdir(units, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(units, uid, uid); err != nil {
		t.Fatal(err)
	}
	d := &hermesd{t: t, dir: dir, socket: filepath.Join(dir, "state", "ctl.sock"), done: make(chan error, 1)}
	logPath := filepath.Join(t.TempDir(), "hermesd.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	d.cmd = exec.Command(bin, "--units", units, "--state", filepath.Join(dir, "state"), "--socket", d.socket,
		"--config", filepath.Join(dir, "none.yaml"), "--role", "gateway", "--supervisor-mode", "pgroup")
	d.cmd.Dir = "/"
	d.cmd.Env = append(os.Environ(), roleEnv+"=hermesd", "HOME="+dir, "XDG_RUNTIME_DIR=", "XDG_STATE_HOME=", "XDG_CONFIG_HOME=")
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	t.Cleanup(func() {
		d.cmd.Process.Signal(syscall.SIGTERM)
		<-d.done
	})
	if !testkit.Within(20*time.Second, d.answers) {
		b, _ := os.ReadFile(logPath)
		t.Fatalf("hermesd as uid %d did not answer on %s within 20s; its log:\n%s", uid, d.socket, b)
	}
	if u, err := proc.UID(d.cmd.Process.Pid); err != nil || u != uid {
		t.Fatalf("hermesd runs as uid %d (%v), want %d", u, err, uid)
	}
	return d
}
