package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
)

// ownerGrace is the grace of the runs under test; ownerWait bounds the
// wait for a tree to be gone (the grace plus the machine's noise).
const (
	ownerGrace = 500 * time.Millisecond
	ownerWait  = 15 * time.Second
)

// pyParent is an agent in Python: it starts its arguments as a child with
// its own standard streams, says "parent PID CHILDPID", and waits.
const pyParent = `import subprocess, sys
p = subprocess.Popen(sys.argv[1:])
print("parent", p.pid, flush=True)
p.wait()
`

// ownedRun is a `hermesctl run` started by a Python parent, and the
// processes its CMD said it started.
type ownedRun struct {
	parent *exec.Cmd
	ctl    proc.Identity
	procs  map[string]proc.Identity // by the name CMD gave
	stderr *os.File
}

// hermesctlBin is the test binary as hermesctl (testscript.Main puts it in
// PATH).
func hermesctlBin(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("hermesctl")
	if err != nil {
		t.Fatalf("the test binary as hermesctl is not in PATH (testscript.Main puts it there): %v", err)
	}
	return bin
}

// startOwnedRun starts python3 running pyParent, which starts `hermesctl
// run` with args (run's flags, --, CMD); CMD says "NAME PID" for each
// process to watch, then "ready". It returns once CMD said ready; a mode
// this machine lacks skips the test.
func startOwnedRun(t *testing.T, mode string, args ...string) *ownedRun {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not in PATH: the owner under test is a Python process")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "parent.py")
	if err := os.WriteFile(script, []byte(pyParent), 0o600); err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stderr.Close() })
	argv := append([]string{script, hermesctlBin(t), "--state", filepath.Join(dir, "state"), "run", "--mode", mode, "--grace", ownerGrace.String()}, args...)
	cmd := exec.Command(py, argv...)
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	cmd.Stderr = stderr
	out := testkit.StartOutput(t, cmd)
	r := &ownedRun{parent: cmd, procs: map[string]proc.Identity{}, stderr: stderr}
	t.Cleanup(func() { r.killParent(t) })
	for {
		line, err := out.ReadString('\n')
		if err != nil {
			b, _ := os.ReadFile(stderr.Name())
			if mode == "cgroup" && strings.Contains(string(b), "cgroup") {
				t.Skipf("cgroup mode unavailable here, untested (the pgroup case covers the fallback): %s", b)
			}
			t.Fatalf("the run did not get ready: %v; stderr:\n%s", err, b)
		}
		f := strings.Fields(line)
		if len(f) == 1 && f[0] == "ready" {
			break
		}
		if len(f) != 2 {
			t.Fatalf("unexpected line %q", line)
		}
		pid, err := strconv.Atoi(f[1])
		if err != nil {
			t.Fatalf("unexpected line %q", line)
		}
		if f[0] == "parent" {
			r.ctl = testkit.Identity(t, pid)
		} else {
			r.procs[f[0]] = testkit.Identity(t, pid)
		}
	}
	t.Cleanup(func() {
		for _, id := range r.procs {
			if id.Alive() {
				syscall.Kill(id.PID, syscall.SIGKILL)
			}
		}
	})
	return r
}

// killParent kills the Python parent with SIGKILL and reaps it.
func (r *ownedRun) killParent(t *testing.T) {
	t.Helper()
	r.parent.Process.Kill() // an error: it has exited already
	r.parent.Wait()
}

// gone waits until hermesctl and every process CMD named have exited.
func (r *ownedRun) gone(t *testing.T) {
	t.Helper()
	testkit.EventuallyOK(t, ownerWait, func() error {
		var alive []string
		if r.ctl.Alive() {
			alive = append(alive, "hermesctl "+r.ctl.String())
		}
		for name, id := range r.procs {
			if id.Alive() {
				alive = append(alive, name+" "+id.String())
			}
		}
		if len(alive) > 0 {
			return fmt.Errorf("still alive after the owner's death: %s", strings.Join(alive, ", "))
		}
		return nil
	})
}

// alive fails the test unless every process CMD named runs.
func (r *ownedRun) alive(t *testing.T) {
	t.Helper()
	for name, id := range r.procs {
		if !id.Alive() {
			t.Errorf("%s %s is gone, want it running", name, id)
		}
	}
}

// treeCmd is CMD of the owner tests: a plain background child and a setsid
// escapee, each named with its pid, under a shell that waits for them.
var treeCmd = []string{"--", "sh", "-c", `sleep 93005 & echo plain $!; setsid sleep 93006 & echo setsid $!; echo ready; wait`}

// TestRunOwnerDeath (issue 25, point 1): a Python agent starts `hermesctl
// run -- sh -c 'sleep A & setsid sleep B & wait'` and is killed with
// kill -9: hermesctl, the shell and both sleeps are gone within the grace,
// in both modes. A second run whose Python parent lives (the control)
// keeps its tree: the fix does not pass by killing everything.
func TestRunOwnerDeath(t *testing.T) {
	if testing.Short() {
		t.Skip("runs hermesctl run under Python parents")
	}
	for _, mode := range []string{"cgroup", "pgroup"} {
		t.Run(mode, func(t *testing.T) {
			control := startOwnedRun(t, mode, treeCmd...)
			r := startOwnedRun(t, mode, treeCmd...)
			r.killParent(t)
			r.gone(t)
			control.alive(t)
			if !control.ctl.Alive() {
				t.Errorf("the control's hermesctl %s is gone", control.ctl)
			}
			b, _ := os.ReadFile(r.stderr.Name())
			if !strings.Contains(string(b), "the owner of this run has exited") {
				t.Errorf("hermesctl's stderr does not say why it stopped CMD:\n%s", b)
			}
			control.killParent(t)
			control.gone(t)
		})
	}
}

// TestRunOwnerFlag: --owner PID makes another process the owner (here a
// sleep of the test's: its death ends the tree while the Python parent
// lives on), and --no-owner keeps today's behaviour: the Python parent's
// death leaves hermesctl and CMD's tree running.
func TestRunOwnerFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("runs hermesctl run under Python parents")
	}
	t.Run("--owner", func(t *testing.T) {
		owner := exec.Command("sleep", "1000")
		id := testkit.StartIdentified(t, owner)
		r := startOwnedRun(t, "pgroup", append([]string{"--owner", strconv.Itoa(id.PID)}, treeCmd...)...)
		defer r.killParent(t)
		owner.Process.Kill()
		r.gone(t)
	})
	t.Run("--no-owner", func(t *testing.T) {
		r := startOwnedRun(t, "pgroup", append([]string{"--no-owner"}, treeCmd...)...)
		r.killParent(t)
		// Nothing to wait for: what must hold is that nothing happens.
		// The grace and a margin pass, then the tree must be whole.
		if testkit.Within(3*ownerGrace+time.Second, func() bool { return !r.ctl.Alive() }) {
			t.Fatal("hermesctl exited at its parent's death under --no-owner")
		}
		r.alive(t)
		syscall.Kill(r.ctl.PID, syscall.SIGKILL) // its supervisor ends the tree
		r.gone(t)
	})
}

// TestRunOwnerRefused: an owner that cannot be watched is refused before
// CMD runs, with one line of error: init, a pid that is gone (an owner
// that died before hermesctl looked), and both owner flags at once.
func TestRunOwnerRefused(t *testing.T) {
	dead := exec.Command("sleep", "1000")
	if err := dead.Start(); err != nil {
		t.Fatal(err)
	}
	dead.Process.Kill()
	dead.Wait()
	for _, tc := range []struct {
		name  string
		flags []string
		code  int
		err   string
	}{
		{"init", []string{"--owner", "1"}, 2, "hermesctl: run: --owner 1: give the pid of a live process of yours, other than init\n"},
		{"dead owner", []string{"--owner", strconv.Itoa(dead.Process.Pid)}, 1,
			fmt.Sprintf("hermesctl: run: the owner, pid %d, has exited: CMD is not run (--no-owner runs it for hermesctl alone)\n", dead.Process.Pid)},
		{"both flags", []string{"--no-owner", "--owner", "5"}, 2, "hermesctl: run: --owner and --no-owner do not go together: give one\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			marker := filepath.Join(dir, "ran")
			cmd := exec.Command(hermesctlBin(t), append(append([]string{"--state", filepath.Join(dir, "state"), "run"}, tc.flags...), "--", "touch", marker)...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != tc.code {
				t.Errorf("exit %d (%v), want %d", code, err, tc.code)
			}
			if stderr.String() != tc.err {
				t.Errorf("stderr %q, want %q", stderr.String(), tc.err)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("CMD ran")
			}
		})
	}
}

// TestRunOwnerStdio: CMD's standard streams are its caller's, through
// hermesctl run as without it: a JSON echo over stdio (an MCP server's
// shape) answers each line, and ends at its stdin's EOF.
func TestRunOwnerStdio(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not in PATH: the echo server is a Python program")
	}
	const echo = `import json, sys
for line in sys.stdin:
    req = json.loads(line)
    print(json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": req["params"]}), flush=True)
`
	dir := t.TempDir()
	cmd := exec.Command(hermesctlBin(t), "--state", filepath.Join(dir, "state"), "run", "--mode", "pgroup", "--", py, "-c", echo)
	cmd.Stderr = os.Stderr
	in, out := testkit.StartPiped(t, cmd)
	defer cmd.Process.Kill()
	for i := range 3 {
		fmt.Fprintf(in, `{"jsonrpc":"2.0","id":%d,"method":"echo","params":{"n":%d}}`+"\n", i, i*i)
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		var resp struct {
			ID     int            `json:"id"`
			Result map[string]int `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &resp); err != nil || resp.ID != i || resp.Result["n"] != i*i {
			t.Fatalf("answer %q to request %d (%v)", line, i, err)
		}
	}
	in.Close()
	if rest, _ := io.ReadAll(out); len(rest) != 0 {
		t.Errorf("more output after EOF: %q", rest)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("hermesctl run: %v, want exit 0 at the server's EOF", err)
	}
}
