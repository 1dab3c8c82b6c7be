package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
)

// shellEnv makes the test binary play an interactive shell ("shell": it
// runs the "client" in a process group of its own, as job control does,
// and relays its output) or hermesctl ("client": it asks hermesd at
// $HERMESD_TEST_SOCKET to adopt its parent's group, and prints the
// answer). Dispatched from init, before TestMain.
const shellEnv = "HERMESD_TEST_SHELL"

func init() {
	switch os.Getenv(shellEnv) {
	case "shell":
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), shellEnv+"=client")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Println("client:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case "client":
		os.Exit(playAdoptParent())
	case "sweep":
		os.Exit(playSweep())
	}
}

// playSweep runs `hermesctl adopt --orphans --yes` from a group of its own
// (as job control gives a command), and prints what the sweep did with
// each leftover.
func playSweep() int {
	if err := syscall.Setpgid(0, 0); err != nil {
		fmt.Println("setpgid:", err)
		return 1
	}
	c, err := control.Dial(os.Getenv("HERMESD_TEST_SOCKET"))
	if err != nil {
		fmt.Println("dial:", err)
		return 1
	}
	defer c.Close()
	rep, err := c.Orphans(context.Background(), control.OrphansRequest{Adopt: true})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	for _, o := range rep.Orphans {
		fmt.Printf("orphan %s group %d adoptable=%v why=%s\n", o.Unit, o.PGID, o.Adoptable, o.Why)
	}
	fmt.Printf("swept: %d adopted\n", len(rep.Adopted))
	return 0
}

// playAdoptParent asks hermesd to adopt the group of its parent (the
// "shell"), as `hermesctl adopt --pgid $(ps -o pgid= $PPID)` would.
func playAdoptParent() int {
	c, err := control.Dial(os.Getenv("HERMESD_TEST_SOCKET"))
	if err != nil {
		fmt.Println("dial:", err)
		return 1
	}
	defer c.Close()
	pgid, err := syscall.Getpgid(os.Getppid())
	if err != nil {
		fmt.Println("getpgid:", err)
		return 1
	}
	a, err := c.Adopt(context.Background(), control.AdoptRequest{PGID: pgid, As: "shell"})
	switch {
	case errors.Is(err, control.ErrRefused):
		fmt.Println("refused:", err)
	case err != nil:
		fmt.Println("error:", err)
	default:
		fmt.Printf("adopted %s group %d\n", a.Unit, a.PGID)
	}
	return 0
}

// TestAdoptRefusesCallerAncestors: `hermesctl adopt --pgid N` with N the
// group of the shell that ran hermesctl (hermesctl has a group of its own
// under job control) was accepted, and the user's terminal then died with
// hermesd. hermesd, which decides the adopt, now walks up from the peer's
// pid (SO_PEERCRED) and refuses any group holding an ancestor, saying why.
func TestAdoptRefusesCallerAncestors(t *testing.T) {
	d, _ := startEmpty(t)

	shell := exec.Command(os.Args[0])
	shell.Env = append(os.Environ(), shellEnv+"=shell", "HERMESD_TEST_SOCKET="+d.socket)
	shell.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := shell.Output()
	t.Cleanup(func() { syscall.Kill(-shell.Process.Pid, syscall.SIGKILL) })
	if err != nil {
		t.Fatalf("shell: %v\n%s", err, out)
	}
	want := fmt.Sprintf("refused: group %d holds pid %d", shell.Process.Pid, shell.Process.Pid)
	if !strings.Contains(string(out), want) || !strings.Contains(string(out), "an ancestor of the hermesctl that asked") {
		t.Errorf("adopting the caller's parent shell's group: got %q, want a refusal starting %q and naming the ancestor", out, want)
	}
	if u, ok := d.status()["shell"]; ok {
		t.Errorf("status lists %+v; want no adopted shell", u)
	}
}

// TestOrphanSweepRefusesCallerAncestors: a shell left by a dead owner (its
// gateway and supervisor killed together) is a leftover in the ledger; the
// user, in that very shell, runs `hermesctl adopt --orphans --yes`. The
// sweep adopted the shell's group, so the user's terminal would die with
// the new hermesd. The sweep now applies adopt's guards: a group holding
// an ancestor of the caller is listed, not adopted, and says why.
func TestOrphanSweepRefusesCallerAncestors(t *testing.T) {
	needsProcesses(t, "hermesd processes")
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	trigger := filepath.Join(dir, "go")
	// The unit plays the user's shell: it waits for the trigger, then runs
	// the sweep as its child, in a group of the child's own.
	script := fmt.Sprintf("while [ ! -e %q ]; do sleep 0.05; done; %q", trigger, os.Args[0])
	y := fmt.Sprintf("command: [sh, -c, %q]\nenv: {%s: sweep, HERMESD_TEST_SOCKET: %q}\n", script, shellEnv, filepath.Join(state, "ctl.sock"))
	testkit.WriteUnits(t, filepath.Join(dir, "units"), map[string]string{"shell.yaml": y})
	// The shell reports into its log after its owner and supervisor died:
	// only a log it writes itself can take that (stamped, its output would
	// go into pipes nobody reads then; see docs/architecture.md).
	gw := startDaemonWith(t, dir, daemonOpts{role: "gateway", env: []string{stampEnv + "=0"}})
	sh := leaderOf(t, state, "shell")
	killGroupAtEnd(t, sh)
	// The gateway and its supervisor die together: the shell is left over.
	gw.killWithSupervisor()
	if !sh.Alive() {
		t.Fatal("the shell died with its owner and supervisor; the story needs a leftover")
	}

	os.Remove(filepath.Join(dir, "units", "shell.yaml"))
	d := startDaemon(t, dir, "gateway")
	if err := os.WriteFile(trigger, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(state, "logs", "shell.log")
	if !fileHas(logPath, "swept:", 20*time.Second) {
		b, _ := os.ReadFile(logPath)
		t.Fatalf("the sweep did not report within 20s; shell.log:\n%s", b)
	}
	b, _ := os.ReadFile(logPath)
	out := string(b)
	if !strings.Contains(out, "swept: 0 adopted") {
		t.Errorf("the sweep adopted the group of the shell that asked; shell.log:\n%s", out)
	}
	want := fmt.Sprintf("orphan shell group %d adoptable=false why=group %d holds pid %d (sh), an ancestor of the hermesctl that asked", sh.PID, sh.PID, sh.PID)
	if !strings.Contains(out, want) {
		t.Errorf("shell.log lacks %q:\n%s", want, out)
	}
	if u := unitNamed(d.fullStatus(), "shell"); u != nil {
		t.Errorf("status lists %+v; want no adopted shell", u)
	}
}
