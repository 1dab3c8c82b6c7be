package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/units"
)

// procField is the value of a "Key:" line of /proc/PID/status.
func procField(t *testing.T, pid int, key string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	t.Fatalf("no %s: line in /proc/%d/status", key, pid)
	return ""
}

// waitFile waits for path to hold want lines, and returns them.
func waitFile(t *testing.T, path string, want int) []string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(b) > 0 && len(lines) >= want {
			return lines
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %q, want %d lines", path, b, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSpawnIdentityAndLimits: a spawn with user:, group:, umask, nice and
// limits runs its program, from its first instruction, as that user and
// group (with the user's groups from the group database), under that
// umask, niceness and limits: the program itself prints them, and
// /proc says the same of the process; in both modes (in cgroup mode the
// gate that holds the program while the owner sets them is forced).
func TestSpawnIdentityAndLimits(t *testing.T) {
	nobody := testkit.Nobody(t, "only root may start a process as another user")
	ids, err := nobody.GroupIds()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range modes(t) {
		t.Run(string(mode), func(t *testing.T) {
			dir := t.TempDir()
			o := newTestOwner(t, Options{StateDir: filepath.Join(dir, "state"), Role: "worker", Mode: mode})
			defer o.Close()
			out := filepath.Join(dir, "out")
			f, err := os.Create(out)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			nice, umask := 7, uint32(0o027)
			c, err := o.SpawnOwned(t.Context(), Spec{
				Unit: "db", Dir: "/", Stdout: f, Env: []string{"PATH=" + os.Getenv("PATH")},
				Argv: []string{"/bin/sh", "-c", `id -u; id -g; umask; ulimit -Sn; ulimit -Hn; ulimit -c; exec sleep 100`},
				Exec: units.Exec{
					User: "nobody", Umask: &umask, Nice: &nice,
					Limits: map[string]units.Rlimit{"nofile": {Soft: 1000, Hard: 2000}, "core": {Soft: 0, Hard: 0}},
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer syscallKill(c.PGID)
			got := waitFile(t, out, 6)
			want := []string{nobody.Uid, nobody.Gid, "0027", "1000", "2000", "0"}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("the program saw uid, gid, umask, nofile soft and hard, core: got %q, want %q", got, want)
			}
			pid := c.Leader.PID
			if u := procField(t, pid, "Uid"); u != strings.Repeat(nobody.Uid+" ", 3)+nobody.Uid {
				t.Errorf("Uid: got %q, want %s four times", u, nobody.Uid)
			}
			if g := procField(t, pid, "Groups"); g != strings.Join(ids, " ") {
				t.Errorf("Groups: got %q, want the user's own %q", g, strings.Join(ids, " "))
			}
			if m := procField(t, pid, "Umask"); m != "0027" {
				t.Errorf("Umask: got %q, want 0027", m)
			}
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil {
				t.Fatal(err)
			}
			// The fields after the command's ")": state is field 3, nice 19.
			fields := strings.Fields(string(stat)[strings.LastIndexByte(string(stat), ')')+1:])
			if n, _ := strconv.Atoi(fields[16]); n != nice {
				t.Errorf("nice: got %s, want %d", fields[16], nice)
			}
			limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(strings.Fields(string(limits)), " "), "Max open files 1000 2000 files") {
				t.Errorf("/proc/%d/limits has no open files 1000 2000:\n%s", pid, limits)
			}
		})
	}
}

// TestSpawnGroupAndNoSupplementary: group: replaces the user's primary
// group, and supplementary_groups: [] leaves none.
func TestSpawnGroupAndNoSupplementary(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: only root may start a process as another user")
	}
	dir := t.TempDir()
	o := newTestOwner(t, Options{StateDir: filepath.Join(dir, "state"), Role: "worker", Mode: ModePGroup})
	defer o.Close()
	c, err := o.SpawnOwned(t.Context(), Spec{
		Unit: "db", Dir: "/", Env: []string{"PATH=" + os.Getenv("PATH")}, Argv: []string{"sleep", "100"},
		Exec: units.Exec{User: "nobody", Group: "4242", Groups: []string{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer syscallKill(c.PGID)
	if g := procField(t, c.Leader.PID, "Gid"); !strings.HasPrefix(g, "4242 4242") {
		t.Errorf("Gid: got %q, want 4242", g)
	}
	if g := procField(t, c.Leader.PID, "Groups"); g != "" {
		t.Errorf("Groups: got %q, want none", g)
	}
	_, err = o.SpawnOwned(t.Context(), Spec{
		Unit: "db", Dir: "/", Env: []string{"PATH=" + os.Getenv("PATH")}, Argv: []string{"sleep", "100"},
		Exec: units.Exec{User: "no-such-user-here"},
	})
	if err == nil || !strings.Contains(err.Error(), "spawn db: user no-such-user-here: user: unknown user no-such-user-here; create it (useradd), or fix user: in the unit") {
		t.Errorf("got %v, want the unknown user named", err)
	}
}

// TestCgroupLimitsWritten: each cgroup limit is written into the unit's
// cgroup, the controller enabled down from the cgroup given to hermesd
// (a tree of plain files standing for cgroupfs: this machine's v2
// hierarchy may lack the controllers); a controller that cgroup lacks is
// a warning naming the key and the controller, and nothing is written.
func TestCgroupLimitsWritten(t *testing.T) {
	top := t.TempDir()
	parent := filepath.Join(top, "hermes-owner")
	dir := filepath.Join(parent, "db.x")
	for _, d := range []string{parent, dir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(top, "cgroup.controllers"), "cpu pids hugetlb\n")
	write(filepath.Join(top, "cgroup.subtree_control"), "")
	write(filepath.Join(parent, "cgroup.controllers"), "")
	write(filepath.Join(parent, "cgroup.subtree_control"), "")
	var warned testkit.Lines
	err := cgroupLimits(top, parent, dir, units.CgroupLimits{MemoryMax: 1 << 30, CPUWeight: 50, CPUMax: 150, TasksMax: 64}, warned.Logf)
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{"pids.max": "64", "cpu.weight": "50", "cpu.max": "150000 100000"} {
		if b, err := os.ReadFile(filepath.Join(dir, file)); err != nil || string(b) != want {
			t.Errorf("%s: got %q (%v), want %q", file, b, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "memory.max")); err == nil {
		t.Error("memory.max written though the memory controller is not delegated")
	}
	for _, p := range []string{top, parent} {
		if b, _ := os.ReadFile(filepath.Join(p, "cgroup.subtree_control")); !strings.HasPrefix(string(b), "+") {
			t.Errorf("%s/cgroup.subtree_control: got %q, want a controller enabled", p, b)
		}
	}
	want := "memory_max: the memory controller is not delegated to " + top + " (controller not delegated; its cgroup.controllers holds: cpu pids hugetlb): memory_max is not applied"
	if warnings := warned.All(); len(warnings) != 1 || !strings.HasPrefix(warnings[0], want) {
		t.Errorf("warnings: got %q, want one starting %q", warnings, want)
	}
}

// TestCgroupLimitsOnThisMachine: in cgroup mode, on this machine's v2
// hierarchy, a limit whose controller is delegated is in the unit's
// cgroup when its program runs, and one whose controller is not is
// warned of, naming the key and the controller.
func TestCgroupLimitsOnThisMachine(t *testing.T) {
	if ok, why := cgroupAvailable(); !ok {
		t.Skipf("cgroup mode not available: %s", why)
	}
	dir := t.TempDir()
	var logged testkit.Lines
	o := newTestOwner(t, Options{StateDir: filepath.Join(dir, "state"), Role: "worker", Mode: ModeCgroup, Logf: logged.Logf})
	defer o.Close()
	b, err := os.ReadFile(filepath.Join(o.tree.base, "cgroup.controllers"))
	if err != nil {
		t.Fatal(err)
	}
	have := strings.Fields(string(b))
	lim := units.CgroupLimits{TasksMax: 64, MemoryMax: 64 << 20}
	c, err := o.SpawnOwned(t.Context(), Spec{Unit: "db", Env: []string{"PATH=" + os.Getenv("PATH")}, Argv: []string{"sleep", "100"}, Exec: units.Exec{Cgroup: lim}})
	if err != nil {
		t.Fatal(err)
	}
	defer killCgroup(c.Cgroup)
	logs := logged.All()
	for _, tc := range []struct{ key, ctrl, file, value string }{{"tasks_max", "pids", "pids.max", "64"}, {"memory_max", "memory", "memory.max", "67108864"}} {
		warned := false
		for _, l := range logs {
			warned = warned || strings.Contains(l, "unit db: "+tc.key+": the "+tc.ctrl+" controller is not delegated to "+o.tree.base)
		}
		if !strings.Contains(" "+strings.Join(have, " ")+" ", " "+tc.ctrl+" ") {
			t.Logf("%s: the %s controller is not in %s/cgroup.controllers (%q): the warning path", tc.key, tc.ctrl, o.tree.base, have)
			if !warned {
				t.Errorf("%s: no warning naming the %s controller; logs: %q", tc.key, tc.ctrl, logs)
			}
			continue
		}
		if got, err := os.ReadFile(filepath.Join(c.Cgroup, tc.file)); err != nil || strings.TrimSpace(string(got)) != tc.value {
			t.Errorf("%s: %s holds %q (%v), want %s", tc.key, tc.file, got, err, tc.value)
		}
		if warned {
			t.Errorf("%s: warned though the %s controller is delegated: %q", tc.key, tc.ctrl, logs)
		}
	}
}

// TestSpawnWorkdirClosedToUser: a unit that runs as another user in a
// working directory that user cannot enter fails its spawn with an error
// that names the directory and the user, not only the chdir's errno
// reported against the program ("fork/exec /bin/sh: permission denied").
func TestSpawnWorkdirClosedToUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: only root may start a process as another user")
	}
	dir := t.TempDir()
	closed := filepath.Join(dir, "closed")
	if err := os.Mkdir(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, mode := range modes(t) {
		t.Run(string(mode), func(t *testing.T) {
			o := newTestOwner(t, Options{Mode: mode})
			defer o.Close()
			_, err := o.SpawnOwned(t.Context(), Spec{
				Unit: "db", Dir: closed, Env: []string{"PATH=" + os.Getenv("PATH")}, Argv: []string{"sleep", "100"},
				Exec: units.Exec{User: "nobody"},
			})
			want := "working directory " + closed + ": the unit's user nobody may not be able to enter it"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("got %v, want an error saying %q", err, want)
			}
		})
	}
}
