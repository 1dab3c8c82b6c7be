//go:build linux

package supervisor

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
)

// narrowFamily spawns, in pgroup mode, n bystanders and one unit whose
// processes leave its group both ways a daemon does: a child that calls
// setsid under the live leader, and a double fork whose middle process
// exits, so that its grandchild is re-parented to the owner. It returns
// the owner, the unit's group, the bystanders' leaders, and the pids of
// the unit's leader, its setsid child and the re-parented grandchild.
func narrowFamily(t *testing.T, n int) (o *Owner, g Group, bystanders []int, leader, child, orphan int) {
	t.Helper()
	o, err := newOwner(Options{Mode: ModePGroup, Grace: testGrace}, launchShell, &ownerHooks{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	marker := newMarker(t, "narrow")
	env := []string{"PATH=" + os.Getenv("PATH"), envRow + "=" + marker}
	for i := range n {
		c, err := o.SpawnOwned(t.Context(), Spec{Unit: fmt.Sprintf("bystander%d", i), Argv: []string{"sleep", "100000"}, Env: env})
		if err != nil {
			t.Fatal(err)
		}
		bystanders = append(bystanders, c.Group.Leader.PID)
	}
	tok := fmt.Sprintf("7%08d", rand.IntN(1e8))
	c, err := o.SpawnOwned(t.Context(), Spec{Unit: "daemons", Env: env, Argv: []string{"/bin/sh", "-c",
		`setsid sleep ` + tok + `1 & sh -c 'setsid sleep ` + tok + `2 & exit 0'; exec sleep ` + tok + `0`}})
	if err != nil {
		t.Fatal(err)
	}
	g = c.Group
	sleeper := func(arg string) int {
		pids, _ := proc.Find(func(st proc.Stat) bool {
			argv, err := proc.Cmdline(st.PID)
			return err == nil && len(argv) == 2 && argv[1] == arg
		})
		if len(pids) == 1 {
			return pids[0]
		}
		return 0
	}
	testkit.Eventually(t, 10*time.Second, "the unit's three sleeps, the grandchild re-parented to the owner", func() bool {
		leader, child, orphan = sleeper(tok+"0"), sleeper(tok+"1"), sleeper(tok+"2")
		st, err := proc.ReadStat(orphan)
		return leader > 0 && child > 0 && err == nil && st.PPID == os.Getpid()
	})
	return o, g, bystanders, leader, child, orphan
}

// TestOwnedTable: a scan narrowed to one spawn reads its leader, what
// descends from it (an escapee that called setsid under the live leader
// included), and the owner's orphans (a double fork's grandchild), and
// nothing of the other spawns, so that its cost does not grow with their
// number.
func TestOwnedTable(t *testing.T) {
	o, g, bystanders, leader, child, orphan := narrowFamily(t, 8)
	o.mu.Lock()
	r := o.findLocked(g)
	narrow := o.narrowLocked([]*reg{r})
	sn := o.snapshotLocked()
	o.mu.Unlock()
	if !narrow {
		t.Fatal("a scan for one spawn of nine is not narrowed")
	}
	stats, live, err := o.ownedTable(sn, []*reg{r})
	if err != nil {
		t.Fatal(err)
	}
	var read []int
	for _, st := range stats {
		read = append(read, st.PID)
	}
	for what, pid := range map[string]int{"leader": leader, "setsid child": child, "re-parented grandchild": orphan} {
		if _, ok := live[pid]; !ok {
			t.Errorf("the narrow table lacks the unit's %s %d; read %v", what, pid, read)
		}
	}
	for _, pid := range bystanders {
		if slices.Contains(read, pid) {
			t.Errorf("the narrow table read bystander %d, another spawn's leader: %v", pid, read)
		}
	}
}

// TestStopOneOfManyNarrow: stopping one spawn among many in pgroup mode
// finds its escapees with a narrowed scan, ends them with it, and leaves
// the other spawns running.
func TestStopOneOfManyNarrow(t *testing.T) {
	o, g, bystanders, leader, child, orphan := narrowFamily(t, 8)
	before := o.hooks.narrowScans.Load()
	if err := o.Stop(t.Context(), g, syscall.SIGTERM, testGrace); err != nil {
		t.Fatal(err)
	}
	if o.hooks.narrowScans.Load() == before {
		t.Error("the stop of one spawn of nine read the whole process table: no narrow scan")
	}
	for what, pid := range map[string]int{"leader": leader, "setsid child": child, "re-parented grandchild": orphan} {
		if st, err := proc.ReadStat(pid); err == nil && !st.Zombie() {
			t.Errorf("the unit's %s %d outlived its Stop", what, pid)
		}
	}
	for _, pid := range bystanders {
		if st, err := proc.ReadStat(pid); err != nil || st.Zombie() {
			t.Errorf("bystander %d did not outlive another spawn's Stop", pid)
		}
	}
}

// TestSIGCHLDScanNarrow (pgroup mode): the scan a SIGCHLD asks for reads
// the owner's orphans, not the whole process table, and a zombie the
// owner inherited (a double fork's grandchild, re-parented to the owner,
// that exited) is still reaped. A pass that comes when a timed scan is
// due reads the whole table instead: such a try proves nothing and is
// made again.
func TestSIGCHLDScanNarrow(t *testing.T) {
	o, g, _, _, _, orphan := narrowFamily(t, 8)
	o.mu.Lock()
	r := o.findLocked(g)
	o.mu.Unlock()
	testkit.Eventually(t, 10*time.Second, "the re-parented grandchild registered as an escapee", func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return len(r.esc) > 0 && o.escPids[orphan]
	})
	if err := syscall.Kill(orphan, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the grandchild reaped", func() bool {
		_, err := proc.ReadStat(orphan)
		return err != nil
	})
	for try := 0; ; try++ {
		n, passes := o.hooks.narrowScans.Load(), o.hooks.passes.Load()
		if err := exec.Command("true").Run(); err != nil { // a child of the owner's process exits: a SIGCHLD
			t.Fatal(err)
		}
		testkit.Eventually(t, hangBound, "a janitor pass after a SIGCHLD", func() bool { return o.hooks.passes.Load() > passes })
		if testkit.Within(2*time.Second, func() bool { return o.hooks.narrowScans.Load() > n }) {
			break
		}
		if try == 4 {
			t.Fatal("5 SIGCHLDs, no narrow scan: the SIGCHLD's scan reads the whole table")
		}
	}
}

// TestStopAllNarrowAmongMany: a StopAll of every spawn, while they are a
// small part of the machine's processes (as the last scan of the whole
// table counted them), reads the owner's tree rather than the whole
// table, and still ends what left the groups (a setsid child, a
// grandchild re-parented to the owner).
func TestStopAllNarrowAmongMany(t *testing.T) {
	o, g, bystanders, leader, child, orphan := narrowFamily(t, 2)
	o.scanAfter(time.Now(), nil) // a whole-table scan: it counts the table
	o.mu.Lock()
	size, regs := o.tableSize, len(o.regs)
	o.mu.Unlock()
	if 4*regs >= size {
		t.Skipf("the machine runs %d processes, too few beside the test's %d spawns for a narrow stop of them all", size, regs)
	}
	orders := []StopOrder{{Group: g, Signal: syscall.SIGTERM, Grace: testGrace}}
	for _, pid := range bystanders {
		orders = append(orders, StopOrder{Group: Group{Unit: "bystander", PGID: pid, Leader: testkit.Identity(t, pid)}, Signal: syscall.SIGTERM, Grace: testGrace})
	}
	before := o.hooks.narrowScans.Load()
	if err := o.StopAll(t.Context(), orders, nil, func(i int, err error) {
		if err != nil {
			t.Errorf("stop of %s: %v", orders[i].Group.Unit, err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if o.hooks.narrowScans.Load() == before {
		t.Errorf("a StopAll of %d spawns among %d processes read the whole process table: no narrow scan", regs, size)
	}
	for what, pid := range map[string]int{"leader": leader, "setsid child": child, "re-parented grandchild": orphan} {
		if st, err := proc.ReadStat(pid); err == nil && !st.Zombie() {
			t.Errorf("the unit's %s %d outlived the StopAll", what, pid)
		}
	}
	for _, pid := range bystanders {
		if st, err := proc.ReadStat(pid); err == nil && !st.Zombie() {
			t.Errorf("bystander %d outlived the StopAll", pid)
		}
	}
}
