package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/procfd"
	"github.com/hermes-units/hermes/proc"
)

// TestRunDescriptors (issue 7, item 5; SPEC §4): the child of `hermesctl
// run` holds hermesctl's own fds 0, 1 and 2 and nothing of hermesctl's:
// no end of the death pipe, no gate pipe, no ledger file or lock, no cgroup
// directory. The death supervisor holds the read end of its pipe on fd 0
// (hermesctl the write end) and /dev/null on 1 and 2. Descriptors that
// hermesctl itself inherited without close-on-exec (here: whatever the test
// binary inherited from its own runner) pass through to the child, as
// through any wrapper (timeout, env, nohup), and the supervisor has them
// too; in pgroup mode fd 3 is the gate's slot, so an inherited fd 3 does
// not reach the child.
func TestRunDescriptors(t *testing.T) {
	if testing.Short() {
		t.Skip("runs hermesctl run")
	}
	bin, err := exec.LookPath("hermesctl")
	if err != nil {
		t.Fatalf("the test binary as hermesctl is not in PATH (testscript.Main puts it there): %v", err)
	}
	// What every child of this test binary inherits from it.
	passed := map[int]string{}
	own, err := procfd.List(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range own {
		if f.Num > 2 && !f.CloseOnExec() {
			passed[f.Num] = f.Target
		}
	}
	for _, mode := range []string{"cgroup", "pgroup"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			stderr, err := os.Create(filepath.Join(dir, "stderr"))
			if err != nil {
				t.Fatal(err)
			}
			defer stderr.Close()
			cmd := exec.Command(bin, "--state", filepath.Join(dir, "state"), "run", "--mode", mode, "--",
				"/bin/sh", "-c", `echo $$; exec sleep 1000`)
			cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
			cmd.Stdout, cmd.Stderr = w, stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			defer func() {
				cmd.Process.Signal(syscall.SIGTERM) // forwarded to the child's group; hermesctl exits with it
				select {
				case <-done:
				case <-time.After(15 * time.Second):
					cmd.Process.Kill()
					<-done
					t.Errorf("hermesctl run did not exit within 15s of TERM")
				}
			}()
			line, err := bufio.NewReader(r).ReadString('\n')
			if err != nil {
				b, _ := os.ReadFile(stderr.Name())
				if mode == "cgroup" && strings.Contains(string(b), "cgroup") {
					t.Skipf("cgroup mode unavailable here, untested (the pgroup case covers the fallback): %s", b)
				}
				t.Fatalf("no pid from the child: %v; hermesctl stderr:\n%s", err, b)
			}
			child, err := strconv.Atoi(strings.TrimSpace(line))
			if err != nil {
				t.Fatalf("child said %q, want its pid", line)
			}
			ctl := cmd.Process.Pid
			ctlFDs, err := procfd.List(ctl)
			if err != nil {
				t.Fatal(err)
			}
			std := map[int]string{}
			for _, f := range ctlFDs {
				if f.Num <= 2 {
					std[f.Num] = f.Target
				}
			}

			want := map[int]string{}
			for n, tg := range passed {
				if !(mode == "pgroup" && n == 3) {
					want[n] = tg
				}
			}
			for n, tg := range std {
				want[n] = tg
			}
			exact(t, fmt.Sprintf("child pid %d", child), child, want, ctlFDs)

			sup := supervisorOf(t, ctl)
			want = map[int]string{0: "pipe:[", 1: "pipe:[", 2: "/dev/null"}
			for n, tg := range passed {
				want[n] = tg
			}
			exact(t, fmt.Sprintf("supervisor pid %d", sup), sup, want, ctlFDs)
			fds, err := procfd.List(sup)
			if err != nil {
				t.Fatal(err)
			}
			if len(fds) > 0 && fds[0].Num == 0 {
				in := fds[0]
				if in.Write() {
					t.Errorf("supervisor fd 0 %v is open for writing, want the read end of the death pipe", in)
				}
				writer := false
				for _, f := range ctlFDs {
					writer = writer || f.Target == in.Target && f.Write()
				}
				if !writer {
					t.Errorf("hermesctl holds no write end of the supervisor's pipe %s", in.Target)
				}
			}
			// fd 1 is the write end of the reply pipe, whose read end only
			// hermesctl holds: the supervisor answers each registration on it.
			for _, out := range fds {
				if out.Num != 1 {
					continue
				}
				reader := false
				for _, h := range ctlFDs {
					reader = reader || h.Target == out.Target && !h.Write()
				}
				if !out.Write() || !reader {
					t.Errorf("supervisor fd 1 %v: want the write end of a reply pipe whose read end hermesctl holds", out)
				}
			}
		})
	}
}

// exact asserts that pid comes to hold exactly want (fd → target prefix),
// no other descriptor; an extra one is shown with hermesctl's descriptors
// on the same target, which names the leak.
func exact(t *testing.T, who string, pid int, want map[int]string, hermesctl []procfd.FD) {
	t.Helper()
	diff, err := procfd.Settled(pid, want, hermesctl, 3*time.Second)
	if err != nil {
		t.Errorf("%s: %v", who, err)
	}
	for _, d := range diff {
		t.Errorf("%s: %s", who, d)
	}
}

// supervisorOf finds the death supervisor among owner's children.
func supervisorOf(t *testing.T, owner int) int {
	t.Helper()
	kids, err := proc.Find(func(s proc.Stat) bool { return s.PPID == owner })
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kids {
		if args, err := proc.Cmdline(k); err == nil && len(args) > 3 && args[3] == "hermes-supervisor" {
			return k
		}
	}
	t.Fatalf("no death supervisor among the children %v of hermesctl %d", kids, owner)
	return 0
}
