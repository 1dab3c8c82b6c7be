package supervisor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// playSigIgn is an owner started with SIGHUP and SIGINT ignored (the
// test's shell ignored them before its exec): it prints its own ignored
// signals ("owner MASK") and spawns a child that prints its own ("child
// MASK"), the masks as /proc/PID/status's SigIgn shows them.
func playSigIgn() int {
	fmt.Println("owner", sigIgn("self"))
	o, err := New(Options{StateDir: os.Getenv(envState), Mode: Mode(os.Getenv(envMode))})
	if err != nil {
		fmt.Fprintln(os.Stderr, "owner:", err)
		return 3
	}
	defer o.Close()
	c, err := o.SpawnOwned(context.Background(), Spec{Unit: "sigs", Argv: []string{"sh", "-c", `grep '^SigIgn:' /proc/self/status | sed 's/^SigIgn:[[:space:]]*/child /'`},
		Env: os.Environ(), Stdout: os.Stdout, Stderr: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "owner:", err)
		return 3
	}
	<-c.Done()
	return 0
}

// sigIgn is the SigIgn mask of /proc/PID/status, "" when unreadable.
func sigIgn(pid string) string {
	b, _ := os.ReadFile("/proc/" + pid + "/status")
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, "SigIgn:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// TestSpawnedSignalsStartDefault: an owner started from nohup or with "&"
// has SIGHUP or SIGINT ignored; the programs it spawns start with both at
// their default action, else a unit's reload_signal: HUP or stop_signal:
// INT would do nothing (a shell cannot even trap a signal ignored at its
// start). In each mode this machine has.
func TestSpawnedSignalsStartDefault(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the masks in /proc/PID/status: Linux only")
	}
	const hupInt = 1<<0 | 1<<1 // SigIgn: signal n is bit n-1; HUP is 1, INT 2
	for _, su := range setups(t) {
		if su.backend == BackendPortable {
			continue // the same spawn as its mode's
		}
		t.Run(su.String(), func(t *testing.T) {
			cmd := exec.Command("sh", "-c", `trap '' HUP INT; exec "$0"`, os.Args[0])
			cmd.Env = append(os.Environ(), envHelper+"=sigign", envState+"="+t.TempDir(), envMode+"="+string(su.mode))
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("owner: %v; said %q", err, out)
			}
			masks := map[string]uint64{}
			for l := range strings.Lines(string(out)) {
				f := strings.Fields(l)
				if len(f) == 2 {
					m, err := strconv.ParseUint(f[1], 16, 64)
					if err == nil {
						masks[f[0]] = m
					}
				}
			}
			owner, ok1 := masks["owner"]
			child, ok2 := masks["child"]
			if !ok1 || !ok2 {
				t.Fatalf("owner said %q, want an owner and a child mask", out)
			}
			if owner&hupInt != hupInt {
				t.Fatalf("the owner started with SigIgn %x: the test's shell did not leave HUP and INT ignored", owner)
			}
			if child&hupInt != 0 {
				t.Errorf("the spawned program started with SigIgn %x: HUP or INT still ignored, want both at their default", child)
			}
		})
	}
}
