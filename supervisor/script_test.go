package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
)

// sleeper starts sleep in its own process group.
func sleeper(t *testing.T) (*exec.Cmd, proc.Identity) {
	t.Helper()
	return startGroup(t, exec.Command("sleep", "1000"))
}

// startGroup starts cmd in its own process group and reads its identity;
// the test's end kills it (the test reaps it, or reaper does).
func startGroup(t *testing.T, cmd *exec.Cmd) (*exec.Cmd, proc.Identity) {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	id, err := proc.Read(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cmd, id
}

// reaper reaps cmd as soon as it exits (a zombie would still count as a
// member of its group) and tells whether it did within 2 s.
func reaper(cmd *exec.Cmd) func() bool {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return func() bool {
		select {
		case <-done:
			return true
		case <-time.After(2 * time.Second):
			return false
		}
	}
}

// TestScriptProtocol drives the supervisor script directly, reading the
// process table from /proc and with ps: bad lines are ignored without
// costing the good ones; unsafe or recycled targets are never signalled.
// (A recycled leader is faked by a wrong start time, which the ps path
// does not compare: it reads the leader's lstart when the line comes, and
// a pid reused under it cannot be arranged here.)
func TestScriptProtocol(t *testing.T) {
	for _, table := range []string{"proc", "ps"} {
		t.Run(table, func(t *testing.T) { scriptProtocol(t, table) })
	}
}

func scriptProtocol(t *testing.T, table string) {
	kill, killID := sleeper(t)
	killed := reaper(kill)
	recycled, recycledID := sleeper(t)
	unreg, unregID := sleeper(t)
	t.Cleanup(func() {
		recycled.Process.Kill()
		unreg.Process.Kill()
		recycled.Wait()
		unreg.Wait()
	})
	p, err := startShell(300*time.Millisecond, syscall.Getpgrp(), "", "", table)
	if err != nil {
		t.Fatal(err)
	}
	line := func(id string, g proc.Identity, start uint64) string {
		return fmt.Sprintf("R %s %d %d %d - -\n", id, g.PID, g.PID, start)
	}
	lines := []string{
		"garbage\n",
		"R x\n",
		"R bad;id 5 5 5 - -\n",
		"R a1 12x 1 1 - -\n",
		"X a9 1 1 1 - -\n",
		"R " + strings.Repeat("z", 300) + fmt.Sprintf(" %d %d %d - -\n", killID.PID, killID.PID, killID.StartTime),
		"R p1 1 1 0 - -\n", // pgid 1: refused
		fmt.Sprintf("R own %d %d 0 - -\n", syscall.Getpgrp(), 0), // the owner's group: refused
		"R cg 0 0 0 - /sys/fs/cgroup/../../etc\n",                // cgroup outside the base: refused
		line("ok1", killID, killID.StartTime),                    // good
		line("un", unregID, unregID.StartTime), "U un\n",         // unregistered
	}
	spared := map[string]*exec.Cmd{"unregistered group": unreg}
	if table == "proc" {
		lines = append(lines, line("rec", recycledID, recycledID.StartTime+1)) // leader alive with another start time
		spared["recycled-leader group"] = recycled
	}
	lines = append(lines, "partial line without newline is never a registration")
	for _, l := range lines {
		if err := rawWrite(p, []byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	testkit.Receive(t, 10*time.Second, p.Exited(), "supervisor did not exit after EOF")
	if !killed() {
		t.Error("registered group survived EOF")
	}
	for name, c := range spared {
		if err := syscall.Kill(c.Process.Pid, 0); err != nil {
			t.Errorf("%s was signalled: got %v, want alive", name, err)
		}
	}
}

// TestRegLine: the line carries the cgroup relative to the base the
// supervisor was started with, whatever the base's path (spaces, "..",
// length), encodes the bytes a field cannot hold, and refuses what it
// cannot carry with an error, never a silent drop.
func TestRegLine(t *testing.T) {
	long := "/sys/fs/cgroup/" + strings.Repeat("d", 300)
	tests := []struct {
		name, base, cgroup string
		want               string // "" = an error
	}{
		{"plain", "/sys/fs/cgroup", "/sys/fs/cgroup/hermes-1_2/u.1_2_3", `R s1 12 12 3 - hermes-1_2/u.1_2_3`},
		{"base with a space", "/sys/fs/cgroup/my jobs", "/sys/fs/cgroup/my jobs/hermes-1_2/u.1_2_3", `R s1 12 12 3 - hermes-1_2/u.1_2_3`},
		{"base with ..", "/sys/fs/cgroup/a..b", "/sys/fs/cgroup/a..b/hermes-1_2/u.1_2_3", `R s1 12 12 3 - hermes-1_2/u.1_2_3`},
		{"base longer than a line", long, long + "/hermes-1_2/u.1_2_3", `R s1 12 12 3 - hermes-1_2/u.1_2_3`},
		{"odd bytes below the base", "/cg", "/cg/a b\\c\nd\te%", `R s1 12 12 3 - a\0040b\0134c\0012d\0011e\0045`},
		{"no cgroup", "/cg", "", `R s1 12 12 3 - -`},
		{"outside the base", "/cg", "/cgx/u", ""},
		{"the base itself", "/cg", "/cg", ""},
		{"climbs out of the base", "/cg", "/cg/../etc", ""},
		{"too long below the base", "/cg", "/cg/" + strings.Repeat("e", 300), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &reg{g: Group{PGID: 12, Leader: proc.Identity{PID: 12, StartTime: 3}, Cgroup: tt.cgroup}}
			l, err := regLine("s1", tt.base, r)
			if tt.want == "" {
				if err == nil {
					t.Errorf("regLine: got %q, want an error", l)
				}
				return
			}
			if err != nil || string(l) != tt.want+"\n" {
				t.Errorf("regLine: got %q, %v; want %q", l, err, tt.want+"\n")
			}
		})
	}
}

// TestScriptSignalsBeforeSweep: at EOF the registered groups get TERM
// before the sweep by tags reads every process's environment (slow with
// many processes, and a read of a stuck process's environment blocks);
// only the parent links (the stat files, which never block) are read
// before. The sweep's grep of the environments is held here until the
// registered group is gone; the tagged escapee the sweep then finds gets
// TERM too.
func TestScriptSignalsBeforeSweep(t *testing.T) {
	realGrep, err := exec.LookPath("grep")
	if err != nil {
		t.Skip("no grep on PATH: the script's sweep needs one")
	}
	dir := t.TempDir()
	hold := filepath.Join(dir, "hold")
	if err := syscall.Mkfifo(hold, 0o600); err != nil {
		t.Fatal(err)
	}
	// The sweep's grep (every process's environment: pid 1's among them)
	// is held; the second look at the pids it found is not.
	fake := fmt.Sprintf("#!/bin/sh\ncase \"$*\" in *\" /proc/1/environ \"*) read -r _ <'%s' ;; esac\nexec '%s' \"$@\"\n", hold, realGrep)
	if err := os.WriteFile(filepath.Join(dir, "grep"), []byte(fake), 0o700); err != nil {
		t.Fatal(err)
	}
	released := false
	release := func() {
		if released {
			return
		}
		released = true
		// O_RDWR never blocks, and the line waits in the FIFO for a
		// grep that has not opened it yet: the end stays open until the
		// test ends.
		f, err := os.OpenFile(hold, os.O_RDWR, 0)
		if err != nil {
			t.Error(err)
			return
		}
		t.Cleanup(func() { f.Close() })
		f.WriteString("go\n")
	}

	group, groupID := sleeper(t)
	groupGone := make(chan struct{})
	go func() { group.Wait(); close(groupGone) }()
	esc := exec.Command("sleep", "1000")
	esc.Env = []string{ledger.EnvSpawn + "=k1"}
	esc.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	escGone := startReaped(t, esc)

	sup := exec.Command(Shell, "-c", script, "hermes-supervisor", "2000", strconv.Itoa(syscall.Getpgrp()), "-", "-")
	sup.Env = []string{"PATH=" + dir + ":/usr/bin:/bin"}
	sup.Dir = "/"
	sup.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	in, out := testkit.StartPiped(t, sup)
	t.Cleanup(func() { release(); sup.Process.Kill(); sup.Wait() })
	fmt.Fprintf(in, "R g1 %d %d %d k1 -\n", groupID.PID, groupID.PID, groupID.StartTime)
	if l, err := out.ReadString('\n'); l != "A g1\n" {
		t.Fatalf("registration: got %q, %v; want \"A g1\\n\"", l, err)
	}
	in.Close()

	testkit.Receive(t, 10*time.Second, groupGone, "the registered group got no TERM within 10s of EOF while the sweep was held")
	select {
	case <-escGone:
		t.Fatal("the escapee died before the sweep that finds it ran")
	default:
	}
	release()
	testkit.Receive(t, 10*time.Second, escGone, "the tagged escapee survived the sweep")
}

// TestScriptRemovesSubtreeLeft: at EOF the script removes the owner's
// subtree (CGOWN) with rmdir, unless it is gone already: an owner that
// closes the pipe at its clean exit removes it first, and its exit would
// wait for a fork and an exec of rmdir for nothing. rmdir is a wrapper
// here that records each run; the subtree is a plain directory.
func TestScriptRemovesSubtreeLeft(t *testing.T) {
	realRmdir, err := exec.LookPath("rmdir")
	if err != nil {
		t.Skip("no rmdir on PATH: the script's removal of the subtree needs one")
	}
	for _, c := range []struct {
		name    string
		present bool
	}{{"present", true}, {"gone", false}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			runs := filepath.Join(dir, "runs")
			fake := fmt.Sprintf("#!/bin/sh\necho \"$*\" >>'%s'\nexec '%s' \"$@\"\n", runs, realRmdir)
			if err := os.WriteFile(filepath.Join(dir, "rmdir"), []byte(fake), 0o700); err != nil {
				t.Fatal(err)
			}
			own := filepath.Join(dir, "subtree")
			if c.present {
				if err := os.Mkdir(own, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			sup := exec.Command(Shell, "-c", script, "hermes-supervisor", "2000", "0", dir, own)
			sup.Env = []string{"PATH=" + dir + ":/usr/bin:/bin"}
			sup.Dir = "/"
			sup.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			in, _ := testkit.StartPiped(t, sup)
			in.Close()
			exited := make(chan error, 1)
			go func() { exited <- sup.Wait() }()
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("supervisor: %v", err)
				}
			case <-time.After(10 * time.Second):
				sup.Process.Kill()
				<-exited
				t.Fatal("the supervisor did not exit within 10s of EOF")
			}
			b, _ := os.ReadFile(runs)
			ran := strings.Count(string(b), "\n")
			if _, err := os.Stat(own); !os.IsNotExist(err) {
				t.Errorf("subtree %s after EOF: got %v, want it removed", own, err)
			}
			if want := map[bool]int{true: 1, false: 0}[c.present]; ran != want {
				t.Errorf("rmdir runs at EOF: got %d (%q), want %d", ran, b, want)
			}
		})
	}
}
