//go:build linux

package supervisor

import (
	"fmt"
	"math/rand/v2"
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

// TestScriptAncestry: at EOF the script finds the descendants of every
// registered group by the parent links it reads before the first TERM, on
// each table (proc, ps) and for each kind of registration (a process
// group; with the proc table, a cgroup, stood in for by a directory whose
// cgroup.procs lists the leader alone), and kills them with the group. The group's leader is
// a shell whose untagged children left it: an env -i child in a session
// of its own, and a chain of three setsids ending in an env -i sleep.
// None carries a spawn key, so only ancestry names them. A stranger in a
// session of its own, and a control group's own setsid child (another
// owner's: not registered here), are spared.
func TestScriptAncestry(t *testing.T) {
	for _, table := range []string{"proc", "ps"} {
		for _, kind := range []string{"pgroup", "cgroup"} {
			t.Run(table+"/"+kind, func(t *testing.T) {
				if table == "ps" && kind == "cgroup" {
					t.Skip("the ps table is the portable backend's, which has no cgroups")
				}
				if _, err := exec.LookPath(table); table == "ps" && err != nil {
					t.Skip("no ps on PATH")
				}
				scriptAncestry(t, table, kind)
			})
		}
	}
}

// tree is a shell leading a process group whose descendants leave it,
// each sleeping a number of its own (n, n+1, …) to be found by.
const tree = `n=$1
setsid env -i sleep $((n + 1)) &
setsid sh -c 'setsid sh -c "setsid env -i sleep $(($1 + 2)) & wait" & wait' sh $n &
exec sleep $n`

func scriptAncestry(t *testing.T, table, kind string) {
	base := 100000 + rand.IntN(800000)
	group := exec.Command("/bin/sh", "-c", tree, "sh", strconv.Itoa(base))
	group.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := group.Start(); err != nil {
		t.Fatal(err)
	}
	go group.Wait()
	ctl := exec.Command("/bin/sh", "-c", tree, "sh", strconv.Itoa(base+10))
	ctl.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := ctl.Start(); err != nil {
		t.Fatal(err)
	}
	go ctl.Wait()
	stranger := exec.Command("sleep", strconv.Itoa(base+20))
	stranger.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	go stranger.Wait()
	t.Cleanup(func() {
		for _, n := range []int{base, base + 1, base + 2, base + 10, base + 11, base + 12, base + 20} {
			for _, pid := range sleeping(n) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	testkit.Eventually(t, 10*time.Second, "the trees in place", func() bool {
		for _, n := range []int{base, base + 1, base + 2, base + 10, base + 11, base + 12, base + 20} {
			if len(sleeping(n)) != 1 {
				return false
			}
		}
		return true
	})
	leader, err := proc.Read(group.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	cgBase, line := "", fmt.Sprintf("R g1 %d %d %d - -\n", leader.PID, leader.PID, leader.StartTime)
	if kind == "cgroup" {
		cgBase = t.TempDir()
		cg := filepath.Join(cgBase, "u")
		if err := os.Mkdir(cg, 0o700); err != nil {
			t.Fatal(err)
		}
		for name, content := range map[string]string{
			"cgroup.events": "populated 1\nfrozen 0\n",
			"cgroup.procs":  fmt.Sprintf("%d\n", leader.PID),
		} {
			if err := os.WriteFile(filepath.Join(cg, name), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		line = "R g1 0 0 0 - u\n"
	}
	p, err := startShell(300*time.Millisecond, syscall.Getpgrp(), cgBase, "-", table)
	if err != nil {
		t.Fatal(err)
	}
	if err := rawWrite(p, []byte(line)); err != nil {
		t.Fatal(err)
	}
	if !exitedCleanly(t, p.(*shellPipe)) {
		t.Errorf("the supervisor did not exit cleanly: %v", p.(*shellPipe).status)
	}
	for i, what := range []string{"leader", "env -i child in its own session", "end of three setsids"} {
		n := base + i
		if !testkit.Within(5*time.Second, func() bool { return len(sleeping(n)) == 0 }) {
			t.Errorf("%s (sleep %d) alive after the supervisor's end", what, n)
		}
	}
	for i, what := range []string{"control group's leader", "control group's env -i child", "control group's end of three setsids", "stranger"} {
		if n := base + 10 + []int{0, 1, 2, 10}[i]; len(sleeping(n)) != 1 {
			t.Errorf("%s (sleep %d) was killed: it descends from no registered group", what, n)
		}
	}
}

// sleeping lists the live processes running "sleep N".
func sleeping(n int) []int {
	pids, _ := proc.Find(func(st proc.Stat) bool { return !st.Zombie() })
	var out []int
	for _, pid := range pids {
		if argv, err := proc.Cmdline(pid); err == nil && strings.Join(argv, " ") == "sleep "+strconv.Itoa(n) {
			out = append(out, pid)
		}
	}
	return out
}

// TestScriptMark: the script computes the mark of a spawn key as markOf
// does (the mark the owner gives the spawn is what the script looks for),
// and none for a key of another shape.
func TestScriptMark(t *testing.T) {
	i := strings.Index(script, "\nmark() {")
	j := strings.Index(script[i+1:], "\n}\n")
	if i < 0 || j < 0 {
		t.Fatal("no mark function in the script")
	}
	fn := script[i+1 : i+1+j+3]
	for _, key := range []string{"1_1_1", "26466_123456789_42", "4194303_8191_268435455", "4194303_99999999999_300000000", "-", "a_1_1", "0_1_1", "01_1_1", "1_1", "4194304_1_1"} {
		out, err := exec.Command(Shell, "-c", fn+`if mark "$1"; then echo "$m"; else echo none; fi`, "sh", key).Output()
		if err != nil {
			t.Fatalf("mark %s: %v", key, err)
		}
		want := "none"
		if m, ok := markOf(key); ok {
			want = strconv.FormatUint(m, 10)
		}
		if got := strings.TrimSpace(string(out)); got != want {
			t.Errorf("script's mark of %q: got %s, want %s", key, got, want)
		}
	}
}
