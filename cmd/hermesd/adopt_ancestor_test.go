package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/hermes-units/hermes/control"
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
	}
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
	if testing.Short() {
		t.Skip("starts hermesd processes")
	}
	dir := t.TempDir()
	writeUnits(t, dir, map[string]string{})
	d := startDaemon(t, dir, "gateway")

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
