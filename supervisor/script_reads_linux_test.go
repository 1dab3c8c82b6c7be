//go:build linux

package supervisor

import (
	"bufio"
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

// TestScriptReadsOnce: at EOF the script reads the process table once
// before the first TERM (the parent links that find the escapees are read
// before any parent is ended), and every registered group and every
// escapee found has its TERM before the table is read again: the EOF path
// costs one read of the table, however many groups it holds. The
// processes are stopped (SIGSTOP), so a TERM sent to them stays pending,
// where a wrapper of the command that reads the table (ps, or grep of
// /proc/*/stat) counts it at each read. The KILL at the grace ends them.
func TestScriptReadsOnce(t *testing.T) {
	for _, table := range []string{"proc", "ps"} {
		t.Run(table, func(t *testing.T) { scriptReadsOnce(t, table) })
	}
}

// tableReader is the command with which the script reads the whole
// process table TABLE (grep of /proc/*/stat, or ps -A), and its path; the
// test skips without it.
func tableReader(t *testing.T, table string) (cmd, path string) {
	t.Helper()
	cmd = map[string]string{"proc": "grep", "ps": "ps"}[table]
	path, err := exec.LookPath(cmd)
	if err != nil {
		t.Skipf("no %s on PATH: the script reads the table with it", cmd)
	}
	return cmd, path
}

func scriptReadsOnce(t *testing.T, table string) {
	cmd, real := tableReader(t, table)
	const groups = 8
	var watched []int
	var lines strings.Builder
	for i := range groups {
		leader, esc := groupWithEscapee(t)
		for _, p := range []int{leader.PID, esc} {
			if err := syscall.Kill(p, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			testkit.Eventually(t, 5*time.Second, "a process to stop", func() bool {
				st, err := proc.ReadStat(p)
				return err == nil && st.State == 'T'
			})
		}
		watched = append(watched, leader.PID, esc)
		fmt.Fprintf(&lines, "R g%d %d %d %d - -\n", i, leader.PID, leader.PID, leader.StartTime)
	}

	dir := t.TempDir()
	bin, log := filepath.Join(dir, "bin"), filepath.Join(dir, "reads.log")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// The wrapper logs, at each read of the whole table, how many of the
	// watched processes have a TERM pending (bit 15 of SigPnd or ShdPnd).
	whole := map[string]string{"proc": "*/proc/*/stat*", "ps": `"-A "*`}[table]
	wrapper := fmt.Sprintf(`#!/bin/sh
case "$*" in
%s)
  k=0
  for p in %s; do
    while read -r f v; do
      case $f in SigPnd: | ShdPnd:) [ $((0x$v & 0x4000)) = 0 ] || { k=$((k + 1)); break; } ;; esac
    done </proc/$p/status
  done
  echo "read $k" >>'%s'
  ;;
esac
exec '%s' "$@"
`, whole, strings.Trim(fmt.Sprint(watched), "[]"), log, real)

	sup, in, rep := wrappedSupervisor(t, bin, cmd, wrapper, table)
	if _, err := in.Write([]byte(lines.String())); err != nil {
		t.Fatal(err)
	}
	for i := range groups {
		if l, err := rep.ReadString('\n'); l != fmt.Sprintf("A g%d\n", i) {
			t.Fatalf("registration %d: got %q, %v", i, l, err)
		}
	}
	exitAtEOF(t, in, sup, 30*time.Second)
	if !testkit.Within(5*time.Second, func() bool {
		for _, p := range watched {
			if !pidGone(p) {
				return false
			}
		}
		return true
	}) {
		t.Error("a group's process or an escapee outlived the KILL at the grace")
	}

	b, _ := os.ReadFile(log)
	reads := strings.Fields(strings.ReplaceAll(string(b), "read ", ""))
	first := -1
	for i, r := range reads {
		if r != "0" {
			first = i
			break
		}
	}
	switch {
	case first < 0:
		t.Fatalf("table reads (TERMs pending at each): %v: none after the TERM", reads)
	case first != 1:
		t.Errorf("table reads (TERMs pending at each): %v: want exactly one read before the first TERM, got %d", reads, first)
	case reads[first] != strconv.Itoa(len(watched)):
		t.Errorf("table reads (TERMs pending at each): %v: want all %d processes TERMed before the table is read again", reads, len(watched))
	}
}

// TestScriptKillsAtGraceWhileSweeping: at EOF a registered group that
// ignores TERM is KILLed at the grace even when the sweep by tags (a grep
// of every process's environment, slow on a crowded machine or blocked by
// a process stuck in the kernel) takes longer than the grace. A wrapper of
// grep holds that sweep for 5 s, then writes whether the group's leader
// was still alive; with a grace of 300 ms it must have been gone.
func TestScriptKillsAtGraceWhileSweeping(t *testing.T) {
	real, err := exec.LookPath("grep")
	if err != nil {
		t.Skip("no grep on PATH: the script sweeps with it")
	}
	g := exec.Command("/bin/sh", "-c", "trap '' TERM; exec sleep 1002")
	g.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Process.Kill(); g.Wait() })
	var leader proc.Identity
	testkit.Eventually(t, 5*time.Second, "the group's leader to exec sleep", func() bool {
		argv, _ := proc.Cmdline(g.Process.Pid)
		leader, err = proc.Read(g.Process.Pid)
		return err == nil && len(argv) > 0 && argv[0] == "sleep"
	})

	dir := t.TempDir()
	bin, log := filepath.Join(dir, "bin"), filepath.Join(dir, "sweep.log")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	wrapper := fmt.Sprintf(`#!/bin/sh
case "$*" in
*" /proc/1/environ "*)
  sleep 5
  st=$(cut -d' ' -f3 /proc/%[1]d/stat 2>/dev/null)
  echo "leader ${st:-gone}" >>'%[2]s'
  ;;
esac
exec '%[3]s' "$@"
`, leader.PID, log, real)
	sup, in, rep := wrappedSupervisor(t, bin, "grep", wrapper, "proc")
	fmt.Fprintf(in, "R g0 %d %d %d sweepkey%d -\n", leader.PID, leader.PID, leader.StartTime, leader.PID)
	if l, err := rep.ReadString('\n'); l != "A g0\n" {
		t.Fatalf("registration: got %q, %v", l, err)
	}
	in.Close()
	if err := sup.Wait(); err != nil {
		t.Errorf("supervisor: %v, want exit 0", err)
	}
	b, _ := os.ReadFile(log)
	got, _, _ := strings.Cut(string(b), "\n") // the KILL round sweeps again
	if got != "leader gone" && got != "leader Z" {
		t.Errorf("when the first sweep by tags returned, 5 s after EOF: %q, want the TERM-ignoring leader gone (KILLed at the 300 ms grace)", got)
	}
}

// groupWithEscapee starts, outside any owner, a process group: a leader
// (sleep, once its shell has exec'd it) and, in a session of its own, its
// untagged child, an escapee that only ancestry names. It returns the
// leader's identity and the escapee's pid; the test's end kills both (the
// escapee only while it is the process started here).
func groupWithEscapee(t *testing.T) (leader proc.Identity, esc int) {
	t.Helper()
	g := exec.Command("/bin/sh", "-c", "setsid sleep 1001 & echo $!; exec sleep 1000")
	g.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := testkit.StartOutput(t, g)
	t.Cleanup(func() { g.Process.Kill(); g.Wait() })
	l, err := out.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	esc, err = strconv.Atoi(strings.TrimSpace(l))
	if err != nil || esc <= 1 {
		t.Fatalf("escapee pid %q: %v", l, err)
	}
	escID := testkit.Identity(t, esc)
	t.Cleanup(func() {
		if id, err := proc.Read(esc); err == nil && id == escID {
			syscall.Kill(esc, syscall.SIGKILL)
		}
	})
	testkit.Eventually(t, 5*time.Second, "the group's leader to exec sleep", func() bool {
		argv, _ := proc.Cmdline(g.Process.Pid)
		leader, err = proc.Read(g.Process.Pid)
		return err == nil && len(argv) > 0 && argv[0] == "sleep"
	})
	return leader, esc
}

// exitAtEOF closes in, the stdin of the supervisor shell sup, and waits
// up to d for sup to exit 0.
func exitAtEOF(t *testing.T, in io.Closer, sup *exec.Cmd, d time.Duration) {
	t.Helper()
	in.Close()
	done := make(chan error, 1)
	go func() { done <- sup.Wait() }()
	if err := testkit.Receive(t, d, done, "the supervisor did not exit within %v of EOF", d); err != nil {
		t.Errorf("supervisor: %v, want exit 0", err)
	}
}

// pidGone says whether pid has exited (reaped, or a zombie).
func pidGone(pid int) bool { st, err := proc.ReadStat(pid); return err != nil || st.Zombie() }

// TestScriptEOFReadsNothingWhenEmpty: at EOF with no group registered (the
// clean stop's usual end: every group ended and was unregistered) the
// script exits without reading the process table, a read of every
// process on the machine that has nothing to find; with a group still
// registered it reads the table and ends the group. A wrapper of the
// command that reads the whole table (grep of /proc/*/stat, or ps -A)
// logs each read.
func TestScriptEOFReadsNothingWhenEmpty(t *testing.T) {
	for _, table := range []string{"proc", "ps"} {
		t.Run(table, func(t *testing.T) {
			t.Run("unregistered", func(t *testing.T) { scriptEOFReads(t, table, false) })
			t.Run("registered", func(t *testing.T) { scriptEOFReads(t, table, true) })
		})
	}
}

func scriptEOFReads(t *testing.T, table string, keep bool) {
	cmd, real := tableReader(t, table)
	g, id := sleeper(t)
	gone := reaper(g)
	dir := t.TempDir()
	bin, log := filepath.Join(dir, "bin"), filepath.Join(dir, "reads.log")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	whole := map[string]string{"proc": "*/proc/*/stat*", "ps": `"-A "*`}[table]
	wrapper := fmt.Sprintf("#!/bin/sh\ncase \"$*\" in %s) echo read >>'%s' ;; esac\nexec '%s' \"$@\"\n", whole, log, real)
	sup, in, rep := wrappedSupervisor(t, bin, cmd, wrapper, table)
	lines := fmt.Sprintf("R g0 %d %d %d k0 -\n", id.PID, id.PID, id.StartTime)
	if !keep {
		lines += "U g0\n"
	}
	if _, err := in.Write([]byte(lines)); err != nil {
		t.Fatal(err)
	}
	for range strings.Count(lines, "\n") {
		if l, err := rep.ReadString('\n'); l != "A g0\n" {
			t.Fatalf("got %q, %v; want \"A g0\\n\"", l, err)
		}
	}
	exitAtEOF(t, in, sup, 30*time.Second)
	b, _ := os.ReadFile(log)
	reads := strings.Count(string(b), "read\n")
	if keep {
		if reads == 0 {
			t.Error("with a group registered at EOF, the table was never read")
		}
		if !gone() {
			t.Error("the group registered at EOF outlived the supervisor")
		}
		return
	}
	if reads != 0 {
		t.Errorf("with nothing registered at EOF, the table was read %d times, want none", reads)
	}
	if _, err := proc.Read(id.PID); err != nil {
		t.Errorf("the unregistered group was ended: %v", err)
	}
}

// wrappedSupervisor starts the death supervisor script on table with a
// 300 ms grace, in a session of its own, with wrapper installed as cmd in
// bin, first on its PATH (a grep, cat or ps that notes what the script
// reads, then runs the real one); the test's end kills it.
func wrappedSupervisor(t *testing.T, bin, cmd, wrapper, table string) (*exec.Cmd, io.WriteCloser, *bufio.Reader) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(bin, cmd), []byte(wrapper), 0o700); err != nil {
		t.Fatal(err)
	}
	sup := exec.Command("/bin/sh", "-c", script, "hermes-supervisor", "300", strconv.Itoa(syscall.Getpgrp()), "-", "-", table)
	sup.Env = []string{"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"}
	sup.Dir = "/"
	sup.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	in, rep := testkit.StartPiped(t, sup)
	t.Cleanup(func() { sup.Process.Kill(); sup.Wait() })
	return sup, in, rep
}

// TestScriptSignalsOnlyTaggedNow: an escapee the sweep by tags found gets
// its signal only while its tag still names it. A sweep of a crowded
// machine takes seconds: the process it read may have ended since, and
// its pid been given to a stranger. A wrapper of grep adds to the sweep's
// findings the pid of a stranger (untagged, as a reused pid would be);
// the stranger must outlive the supervisor, while a tagged escapee it
// really found is ended.
func TestScriptSignalsOnlyTaggedNow(t *testing.T) {
	real, err := exec.LookPath("grep")
	if err != nil {
		t.Skip("no grep on PATH: the script sweeps with it")
	}
	const key = "recycledkey"
	start := func(env []string, argv ...string) *exec.Cmd {
		c := exec.Command(argv[0], argv[1:]...)
		c.Env = env
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		return c
	}
	leader := start(nil, "sleep", "1005")
	tagged := start([]string{"HERMES_SPAWN=" + key}, "sleep", "1006")
	stranger := start(nil, "sleep", "1007")
	var ids [3]proc.Identity
	for i, c := range []*exec.Cmd{leader, tagged, stranger} {
		testkit.Eventually(t, 5*time.Second, "sleep to run", func() bool {
			argv, _ := proc.Cmdline(c.Process.Pid)
			ids[i], err = proc.Read(c.Process.Pid)
			return err == nil && len(argv) > 0 && argv[0] == "sleep"
		})
	}

	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	wrapper := fmt.Sprintf(`#!/bin/sh
case "$*" in
*" /proc/1/environ "*) echo /proc/%d/environ ;; # the sweep: every process's
esac
exec '%s' "$@"
`, stranger.Process.Pid, real)
	sup, in, rep := wrappedSupervisor(t, bin, "grep", wrapper, "proc")
	fmt.Fprintf(in, "R g0 %d %d %d %s -\n", ids[0].PID, ids[0].PID, ids[0].StartTime, key)
	if l, err := rep.ReadString('\n'); l != "A g0\n" {
		t.Fatalf("registration: got %q, %v", l, err)
	}
	exitAtEOF(t, in, sup, 30*time.Second)
	if ids[0].Alive() {
		t.Error("the registered group outlived the supervisor")
	}
	if ids[1].Alive() {
		t.Error("the escapee its tag names outlived the supervisor")
	}
	if !ids[2].Alive() {
		t.Error("the supervisor signalled a process no tag names, because a sweep had listed its pid")
	}
}

// TestScriptSignalsMemberThatLeaves: a member of a registered group that
// leaves it (setsid) after the script read the table and before its TERM
// still gets the TERM. The table showed it in the group, so it is no
// escapee by ancestry, and the TERM to the group no longer reaches it; its
// parent then dies of that TERM and it is re-parented out of reach of the
// KILL round's read. A wrapper of the command that reads the whole table
// (grep of /proc/*/stat, or ps -A) makes the member leave between the read
// and the output, the worst moment, on its first read after the
// registration.
func TestScriptSignalsMemberThatLeaves(t *testing.T) {
	for _, table := range []string{"proc", "ps"} {
		t.Run(table, func(t *testing.T) { scriptSignalsMemberThatLeaves(t, table) })
	}
}

func scriptSignalsMemberThatLeaves(t *testing.T, table string) {
	cmd, real := tableReader(t, table)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "member")
	// The leader starts a member in its group that leaves the group, as
	// a daemon would, when it gets USR1; then the leader becomes a sleep.
	leader := exec.Command("/bin/sh", "-c", `sh -c 'trap "exec setsid sleep 1009" USR1; echo $$ >"$1.tmp"; mv "$1.tmp" "$1"; while :; do sleep 0.02; done' sh "$1" &
exec sleep 1008`, "sh", pidFile)
	leader.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { leader.Process.Kill(); leader.Wait() })
	var member int
	testkit.Eventually(t, 10*time.Second, "the member to start", func() bool {
		b, err := os.ReadFile(pidFile)
		member, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && member > 1
	})
	var lid proc.Identity
	testkit.Eventually(t, 10*time.Second, "the leader to become a sleep", func() bool {
		argv, _ := proc.Cmdline(leader.Process.Pid)
		var err error
		lid, err = proc.Read(leader.Process.Pid)
		return err == nil && len(argv) > 0 && argv[0] == "sleep"
	})
	mid, err := proc.Read(member)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(member, syscall.SIGKILL) })

	bin, arm := filepath.Join(dir, "bin"), filepath.Join(dir, "arm")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	whole := map[string]string{"proc": `*"/dev/null /proc/"*`, "ps": `"-A "*`}[table]
	wrapper := fmt.Sprintf(`#!/bin/sh
case "$*" in
%[1]s)
  if [ -e '%[2]s' ]; then
    rm -f '%[2]s'
    out=$('%[3]s' "$@")
    kill -USR1 %[4]d
    i=0
    while [ $i -lt 1000 ]; do
      read -r l </proc/%[4]d/stat || break
      set -- ${l##*") "}
      [ "$3" = %[4]d ] && break
      i=$((i + 1))
      sleep 0.01
    done
    printf '%%s\n' "$out"
    exit 0
  fi ;;
esac
exec '%[3]s' "$@"
`, whole, arm, real, member)
	sup, in, rep := wrappedSupervisor(t, bin, cmd, wrapper, table)
	fmt.Fprintf(in, "R g0 %d %d %d k0 -\n", lid.PID, lid.PID, lid.StartTime)
	if l, err := rep.ReadString('\n'); l != "A g0\n" {
		t.Fatalf("registration: got %q, %v", l, err)
	}
	if err := os.WriteFile(arm, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	exitAtEOF(t, in, sup, 30*time.Second)
	if _, err := os.Stat(arm); err == nil {
		t.Fatal("the script did not read the table at EOF")
	}
	if st, err := proc.ReadStat(member); err == nil && st.PGID != member && !st.Zombie() {
		t.Fatalf("the member never left the group (pgid %d)", st.PGID)
	}
	if lid.Alive() {
		t.Error("the registered group's leader outlived the supervisor")
	}
	if mid.Alive() {
		t.Error("a member that left its group between the table's read and the TERM outlived the supervisor")
	}
}
