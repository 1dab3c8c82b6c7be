package metrics

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
)

// TestUnitUsage: hermes_unit_memory_bytes and hermes_unit_cpu_seconds_total
// are the whole unit's. pgroup mode: a real group of two processes (a
// shell and its cat) counts both, more than the leader's resident set
// alone. cgroup mode, on a stand-in cgroup directory: memory.current and
// usage_usec when the memory controller is there; without it (this
// machine's hybrid hierarchy), the resident sets of cgroup.procs' pids.
func TestUnitUsage(t *testing.T) {
	cmd := exec.Command("sh", "-c", `exec 3<&0; cat <&3 >/dev/null & echo ready; wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, out := testkit.StartPiped(t, cmd)
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("shell said %q (%v), want ready", line, err)
	}
	pgid := cmd.Process.Pid
	var members []int
	// The cat counts once it runs: blocked in its read. Just forked, or in
	// its exec, it had no pages yet, and the group's sum was the shell's.
	catReading := func(pid int) bool {
		st, err := proc.ReadStat(pid)
		return err == nil && st.Comm == "cat" && st.State == 'S' && st.RSS > 0
	}
	testkit.EventuallyOK(t, 10*time.Second, func() (err error) {
		if members, err = proc.GroupMembers(pgid); err == nil && (len(members) < 2 || !slices.ContainsFunc(members, catReading)) {
			err = fmt.Errorf("group %d has members %v, want the shell and cat reading", pgid, members)
		}
		return err
	})

	withMem, noMem := t.TempDir(), t.TempDir()
	for dir, files := range map[string]map[string]string{
		withMem: {"cpu.stat": "usage_usec 2500000\nuser_usec 2000000\n", "memory.current": "73400320\n", "cgroup.procs": ""},
		noMem:   {"cpu.stat": "usage_usec 1500000\n", "cgroup.procs": formatPids(members)},
	} {
		for name, s := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	st := control.Status{Units: []control.Unit{
		{Name: "pg", State: control.StateRunning, PID: pgid, PGID: pgid},
		{Name: "cg", State: control.StateRunning, PID: 1, PGID: 1, Cgroup: withMem},
		{Name: "cgnomem", State: control.StateRunning, PID: pgid, PGID: pgid, Cgroup: noMem},
		{Name: "idle", State: control.StateInactive},
	}}
	m := New(Options{Status: func(context.Context) (control.Status, error) { return st, nil }})
	f := Scrape(t, m.Handler("", false))
	// The leader's resident set, read after the scrape: an idle process's
	// pages may be reclaimed but do not grow, so this is at most what the
	// scrape saw of it.
	leaderRSS, err := proc.RSS(pgid)
	if err != nil {
		t.Fatal(err)
	}

	if got := f.Value("hermes_unit_memory_bytes", "unit", "pg"); got <= float64(leaderRSS) {
		t.Errorf("pgroup: memory %v, want more than the leader's resident set alone (%d): the cat's too", got, leaderRSS)
	}
	if got := f.Value("hermes_unit_memory_bytes", "unit", "cg"); got != 73400320 {
		t.Errorf("cgroup: memory %v, want memory.current 73400320", got)
	}
	if got := f.Value("hermes_unit_cpu_seconds_total", "unit", "cg"); got != 2.5 {
		t.Errorf("cgroup: CPU %v, want usage_usec's 2.5 s", got)
	}
	pg, nomem := f.Value("hermes_unit_memory_bytes", "unit", "pg"), f.Value("hermes_unit_memory_bytes", "unit", "cgnomem")
	if nomem <= float64(leaderRSS) || nomem < pg/2 || nomem > pg*2 {
		t.Errorf("cgroup without the memory controller: memory %v, want its processes' sum (the group's is %v, the leader's %d)", nomem, pg, leaderRSS)
	}
	if got := f.Value("hermes_unit_cpu_seconds_total", "unit", "cgnomem"); got != 1.5 {
		t.Errorf("cgroup without the memory controller: CPU %v, want usage_usec's 1.5 s", got)
	}
	for _, name := range []string{"hermes_unit_memory_bytes", "hermes_unit_cpu_seconds_total"} {
		if got := f.Value(name, "unit", "idle"); got != 0 {
			t.Errorf("%s of a unit that runs nothing = %v, want 0 (a series from its first appearance)", name, got)
		}
	}
}

func formatPids(pids []int) string {
	var b []byte
	for _, p := range pids {
		b = append(b, []byte(strconv.Itoa(p)+"\n")...)
	}
	return string(b)
}
