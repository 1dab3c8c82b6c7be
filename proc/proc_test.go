//go:build linux

package proc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The test binary is its own helper: with helperEnv set it says "ready" and
// lives until its stdin closes.
const helperEnv = "PROC_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// start runs a helper child with extra args and env and waits for its
// "ready". Cleanup closes its stdin and reaps it.
func start(t *testing.T, attr *syscall.SysProcAttr, args []string, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$"}, args...)...)
	// The race runtime sleeps a second at exit by default; helpers need not.
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	cmd.Env = append(append(os.Environ(), helperEnv+"=1", "GORACE="+gorace), env...)
	cmd.SysProcAttr = attr
	cmd.Stderr = os.Stderr
	return &child{cmd: cmd, stdin: startReady(t, cmd, "child")}
}

// startReady starts cmd with pipes on its stdin and stdout and waits for
// the "ready" line it prints; it returns the stdin pipe, whose close is
// cmd's signal to end. who names cmd in a failure. Cleanup closes the pipe
// and reaps cmd, unless the test has.
func startReady(t *testing.T, cmd *exec.Cmd, who string) io.WriteCloser {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopChild(cmd, stdin) })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("%s said %q (%v), want ready", who, line, err)
	}
	return stdin
}

// exit closes stdin and waits until the child has exited, without reaping
// it: it stays a zombie until stop.
func (c *child) exit(t *testing.T) {
	t.Helper()
	c.stdin.Close()
	// waitid with WNOWAIT blocks until the child has exited and leaves it
	// a zombie for Wait to reap later.
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, c.cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
}

func (c *child) stop() { stopChild(c.cmd, c.stdin) }

func stopChild(cmd *exec.Cmd, stdin io.Closer) {
	stdin.Close()
	if cmd.ProcessState == nil {
		_ = cmd.Wait()
	}
}

func TestParseStat(t *testing.T) {
	tail := " S 1 100 100 0 -1 4194560 100 0 0 0 1 2 3 4 20 0 1 0 123456 1000 10"
	for _, tc := range []struct {
		name    string
		in      string
		want    Stat
		wantErr bool
	}{
		{"plain", "42 (sleep)" + tail, Stat{PID: 42, Comm: "sleep", State: 'S', PPID: 1, PGID: 100, SID: 100, StartTime: 123456, CPU: 3, ChildCPU: 7, RSS: 10 * pageSize}, false},
		{"spaces", "42 (my prog name)" + tail, Stat{PID: 42, Comm: "my prog name", State: 'S', PPID: 1, PGID: 100, SID: 100, StartTime: 123456, CPU: 3, ChildCPU: 7, RSS: 10 * pageSize}, false},
		{"paren", "42 (a) b)" + tail, Stat{PID: 42, Comm: "a) b", State: 'S', PPID: 1, PGID: 100, SID: 100, StartTime: 123456, CPU: 3, ChildCPU: 7, RSS: 10 * pageSize}, false},
		{"paren and spaces", "42 ((x) ) S 9 9 ()" + tail, Stat{PID: 42, Comm: "(x) ) S 9 9 (", State: 'S', PPID: 1, PGID: 100, SID: 100, StartTime: 123456, CPU: 3, ChildCPU: 7, RSS: 10 * pageSize}, false},
		{"zombie", "42 (z)" + strings.Replace(tail, " S ", " Z ", 1), Stat{PID: 42, Comm: "z", State: 'Z', PPID: 1, PGID: 100, SID: 100, StartTime: 123456, CPU: 3, ChildCPU: 7, RSS: 10 * pageSize}, false},
		{"empty comm", "42 ()" + tail, Stat{PID: 42, Comm: "", State: 'S', PPID: 1, PGID: 100, SID: 100, StartTime: 123456, CPU: 3, ChildCPU: 7, RSS: 10 * pageSize}, false},
		{"no parens", "42 sleep S 1 2 3", Stat{}, true},
		{"short", "42 (sleep) S 1 100 100", Stat{}, true},
		{"bad pgid", "42 (x) S 1 x 100 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 123456 1000 10", Stat{}, true},
		{"bad starttime", "42 (x) S 1 100 100 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 -5 1000 10", Stat{}, true},
		{"bad rss", "42 (x) S 1 100 100 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 123456 1000 x", Stat{}, true},
		{"no rss", "42 (x) S 1 100 100 0 -1 4194560 100 0 0 0 1 2 3 4 20 0 1 0 123456", Stat{PID: 42, Comm: "x", State: 'S', PPID: 1, PGID: 100, SID: 100, StartTime: 123456, CPU: 3}, false},
		{"empty", "", Stat{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStat(42, []byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseStat(%q) error %v, want error %v", tc.in, err, tc.wantErr)
			}
			if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("parseStat(%q)\n got %+v\nwant %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestReadStatSelf(t *testing.T) {
	st, err := ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.PID != os.Getpid() || st.PPID != os.Getppid() || st.PGID != syscall.Getpgrp() || st.StartTime == 0 {
		t.Errorf("got %+v, want pid %d, ppid %d, pgid %d, a start time", st, os.Getpid(), os.Getppid(), syscall.Getpgrp())
	}
}

// reapedPID is the pid of a helper child that has exited and been reaped:
// a pid that names no process (until the kernel hands it out again).
func reapedPID(t *testing.T) int {
	t.Helper()
	c := start(t, nil, nil)
	c.stop()
	return c.cmd.Process.Pid
}

func TestReadStatGone(t *testing.T) {
	for _, pid := range []int{0, -1} {
		if _, err := ReadStat(pid); !errors.Is(err, ErrGone) {
			t.Errorf("ReadStat(%d): got %v, want ErrGone", pid, err)
		}
	}
	pid := reapedPID(t)
	if _, err := ReadStat(pid); !errors.Is(err, ErrGone) {
		t.Errorf("ReadStat of a reaped child: got %v, want ErrGone", err)
	}
}

func TestIdentityAlive(t *testing.T) {
	live := start(t, nil, nil)
	liveID, err := Read(live.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	zombie := start(t, nil, nil)
	zombieID, err := Read(zombie.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	zombie.exit(t)
	reaped := start(t, nil, nil)
	reapedID, err := Read(reaped.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	reaped.stop()
	mismatch := liveID
	mismatch.StartTime++
	otherBoot := liveID
	otherBoot.BootID = "another-boot"
	noBoot := liveID
	noBoot.BootID = ""

	for _, tc := range []struct {
		name string
		id   Identity
		want bool
	}{
		{"live child", liveID, true},
		{"exited child not yet reaped", zombieID, false},
		{"exited and reaped child", reapedID, false},
		{"mismatched start time", mismatch, false},
		{"other boot", otherBoot, false},
		{"no boot id", noBoot, true},
		{"zero", Identity{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.id.Alive(); got != tc.want {
				t.Errorf("%+v.Alive() = %v, want %v", tc.id, got, tc.want)
			}
		})
	}
}

func TestSelf(t *testing.T) {
	id, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	boot, err := BootID()
	if err != nil {
		t.Fatal(err)
	}
	if id.PID != os.Getpid() || id.BootID != boot || id.IsZero() || !id.Alive() {
		t.Errorf("Self() = %+v, want pid %d, boot %s, alive", id, os.Getpid(), boot)
	}
	if want := fmt.Sprintf("%d@%d", id.PID, id.StartTime); id.String() != want {
		t.Errorf("String() = %q, want %q", id.String(), want)
	}
}

func TestGroupMembers(t *testing.T) {
	leader := start(t, &syscall.SysProcAttr{Setpgid: true}, nil)
	pgid := leader.cmd.Process.Pid
	member := start(t, &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}, nil)
	outsider := start(t, nil, nil)
	_ = outsider

	got, err := GroupMembers(pgid)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := []int{pgid, member.cmd.Process.Pid}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("GroupMembers(%d) = %v, want %v", pgid, got, want)
	}

	// A zombie leader is no member; the group lives on in its member.
	leader.exit(t)
	if got, _ := GroupMembers(pgid); !slices.Equal(got, []int{member.cmd.Process.Pid}) {
		t.Errorf("after the leader exited: GroupMembers(%d) = %v, want [%d]", pgid, got, member.cmd.Process.Pid)
	}
	leader.stop()
	member.stop()
	if got, _ := GroupMembers(pgid); len(got) != 0 {
		t.Errorf("after every member exited: GroupMembers(%d) = %v, want none", pgid, got)
	}
	if got, _ := GroupMembers(0); len(got) != 0 {
		t.Errorf("GroupMembers(0) = %v, want none", got)
	}
}

func TestCmdlineEnviron(t *testing.T) {
	c := start(t, nil, []string{"-test.v=false", "arg with space", ""}, "PROC_TEST_MARK=a=b c")
	pid := c.cmd.Process.Pid
	argv, err := Cmdline(pid)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{os.Args[0], "-test.run=^$", "-test.v=false", "arg with space", ""}
	if !slices.Equal(argv, want) {
		t.Errorf("Cmdline = %q, want %q", argv, want)
	}
	env, err := Environ(pid)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(env, "PROC_TEST_MARK=a=b c") || !slices.Contains(env, helperEnv+"=1") {
		t.Errorf("Environ lacks the child's variables: %q", env)
	}
	c.stop()
	if _, err := Cmdline(pid); !errors.Is(err, ErrGone) {
		t.Errorf("Cmdline of a reaped child: got %v, want ErrGone", err)
	}
	if _, err := Environ(pid); !errors.Is(err, ErrGone) {
		t.Errorf("Environ of a reaped child: got %v, want ErrGone", err)
	}
}

func TestSplitNUL(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []string
	}{
		{"empty", "", nil},
		{"one", "a\x00", []string{"a"}},
		{"two", "a\x00b c\x00", []string{"a", "b c"}},
		{"no trailing NUL", "a\x00b", []string{"a", "b"}},
		{"inner empty", "a\x00\x00b\x00", []string{"a", "", "b"}},
		{"trailing empty", "a\x00\x00", []string{"a", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := splitNUL([]byte(tc.in)); !slices.Equal(got, tc.want) {
				t.Errorf("splitNUL(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestParseStatAllocs: parsing a stat line allocates its command name
// and one copy of the line's rest, not a slice of its 50 fields: a scan of
// the whole process table parses one line a process.
func TestParseStatAllocs(t *testing.T) {
	line := []byte("42 (sleep) S 1 100 100 0 -1 4194560 100 0 0 0 1 2 3 4 20 0 1 0 123456 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0")
	if allocs := testing.AllocsPerRun(100, func() {
		if _, err := parseStat(42, line); err != nil {
			t.Fatal(err)
		}
	}); allocs > 2 {
		t.Errorf("parseStat allocated %.0f times a line, want 2 (the name, the rest of the line)", allocs)
	}
}
