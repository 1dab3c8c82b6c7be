package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
)

// daemonOf waits for the one process whose command line is argv, a child
// of the owner (this process) that leads a session of its own: a daemon
// re-parented to the owner once its launcher exited. Its pid is killed at
// the end of the test.
func daemonOf(t *testing.T, argv string) proc.Stat {
	t.Helper()
	var st proc.Stat
	testkit.Eventually(t, 20*time.Second, "the daemon "+argv+" re-parented to the owner", func() bool {
		pids, _ := proc.Find(func(s proc.Stat) bool { return !s.Zombie() && s.PPID == os.Getpid() })
		for _, pid := range pids {
			if a, err := proc.Cmdline(pid); err == nil && strings.Join(a, " ") == argv {
				s, err := proc.ReadStat(pid)
				if err == nil && s.SID == pid {
					st = s
					return true
				}
			}
		}
		return false
	})
	if st.PID > 1 {
		t.Cleanup(func() { syscall.Kill(st.PID, syscall.SIGKILL) })
	}
	return st
}

// TestAttributeSpawnedDuringTheScan: a scan takes its view of the
// registrations, then reads the process table. A spawn registered in
// between, whose launcher daemonized and exited before the read (the
// daemon re-parented to the owner, in a session of its own, its
// environment erased, its stdio /dev/null: only its mark names the
// spawn), is that spawn's: the scan weighs the evidence against the
// registrations as they are once the table is read, not as they were
// before it. Taken from the older view, no spawn was named and the daemon
// was registered as an orphan: two forking units started together each
// "left no process", their daemons held as no unit's.
func TestAttributeSpawnedDuringTheScan(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("orphans come to the owner as the child subreaper, and marks are read, on Linux only")
	}
	viewed, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	armed := make(chan struct{})
	hooks := &ownerHooks{scanViewed: func() {
		select {
		case <-armed:
			once.Do(func() { close(viewed); <-resume })
		default:
		}
	}}
	o, err := newOwner(Options{Mode: ModePGroup, Grace: testGrace}, launchShell, hooks)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	var resumed sync.Once
	t.Cleanup(func() { resumed.Do(func() { close(resume) }) })
	close(armed)
	scanned := make(chan struct{})
	go func() { o.scan(); close(scanned) }()
	select {
	case <-viewed:
	case <-time.After(hangBound):
		t.Fatal("no scan took its view of the registrations")
	}
	argv := fmt.Sprintf("sleep %d%06d", 7100, os.Getpid()%1000000)
	c, err := o.SpawnOwned(t.Context(), Spec{Unit: "d", Argv: []string{"/bin/sh", "-c",
		"setsid env -i " + argv + " </dev/null >/dev/null 2>&1 & exit 0"}})
	if err != nil {
		t.Fatal(err)
	}
	o.mu.Lock()
	mark := o.findLocked(c.Group).mark
	o.mu.Unlock()
	if mark == 0 {
		t.Skip("the spawn has no mark (RLIMIT_LOCKS's hard limit is lowered here): nothing else names its daemon")
	}
	daemon := daemonOf(t, argv)
	resumed.Do(func() { close(resume) })
	select {
	case <-scanned:
	case <-time.After(hangBound):
		t.Fatal("the scan did not end")
	}
	if got := o.Status().Orphans; slices.Contains(got, daemon.PGID) {
		t.Errorf("the daemon's group %d was registered as an orphan (orphans %v); its mark names spawn %s", daemon.PGID, got, c.Key)
	}
	ms := o.Members(c.Group)
	if !slices.ContainsFunc(ms, func(id proc.Identity) bool { return id.PID == daemon.PID }) {
		t.Errorf("the spawn's members %v do not include its daemon %d", ms, daemon.PID)
	}
}

// detachedChild starts, as a child of the owner (this process), a process
// in a session of its own with an erased environment and stdio /dev/null
// (as a daemon re-parented to the owner that nothing names), and returns
// its stat. exited is closed once it is reaped; the test's end kills it.
func detachedChild(t *testing.T) (st proc.Stat, exited <-chan struct{}) {
	t.Helper()
	cmd := exec.Command("env", "-i", "sleep", "1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	exited = startReaped(t, cmd)
	st, err := proc.ReadStat(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return st, exited
}

// orphanChild starts a detachedChild, waits for a scan to register its
// group as an orphan, and for the supervisor's answer.
func orphanChild(t *testing.T, o *Owner) (st proc.Stat, exited <-chan struct{}) {
	t.Helper()
	st, exited = detachedChild(t)
	var e *reg
	testkit.Eventually(t, 20*time.Second, fmt.Sprintf("process %d registered as an orphan", st.PID), func() bool {
		o.scan()
		o.mu.Lock()
		defer o.mu.Unlock()
		for _, r := range o.regs {
			if r.orphan && r.g.PGID == st.PGID {
				e = r
			}
		}
		return e != nil
	})
	<-e.answered
	return st, exited
}

// TestClaimMovesTheOrphan: a process registered as an orphan (no
// evidence named a spawn when it was found) moves under a spawn once
// evidence names that spawn (Claim: the unit's pid file names it): it is
// listed among the spawn's members, no longer among the orphans, and
// still dies with the owner. A claim is refused for a process that
// started before the spawn's leader (a stale pid file naming a recycled
// pid), for one that is no orphan (a claim made already), and for a
// group that is not a spawn of this owner. Unclaimed says whether an
// orphan younger than the spawn is held.
func TestClaimMovesTheOrphan(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("orphans come to the owner as the child subreaper on Linux only")
	}
	o := newTestOwner(t, Options{Mode: ModePGroup, Grace: testGrace})
	t.Cleanup(func() { o.Close() })
	early, _ := orphanChild(t, o)
	c, err := o.SpawnOwned(t.Context(), Spec{Unit: "d", Argv: []string{"/bin/sh", "-c", "exec sleep 1000"}})
	if err != nil {
		t.Fatal(err)
	}
	daemon, exited := orphanChild(t, o)
	if got := o.Status().Orphans; !slices.Contains(got, daemon.PGID) {
		t.Fatalf("orphans %v, want %d among them", got, daemon.PGID)
	}
	if c.Leader.StartTime > early.StartTime && o.Claim(c.Group, early.PID, "a stale pid file") {
		t.Errorf("process %d, started before the spawn's leader, was claimed for it", early.PID)
	}
	if o.Claim(Group{Unit: "x", PGID: daemon.PGID, Leader: proc.Identity{PID: daemon.PGID, StartTime: daemon.StartTime}}, daemon.PID, "a group not spawned here") {
		t.Error("the orphan was claimed for a group that is no spawn of the owner")
	}
	if !o.Unclaimed(c.Group) {
		t.Error("Unclaimed: false while the owner holds an orphan younger than the spawn")
	}
	if !o.Claim(c.Group, daemon.PID, "its pid file names it") {
		t.Fatal("the orphan was not claimed for the spawn that evidence names")
	}
	if got := o.Status().Orphans; slices.Contains(got, daemon.PGID) {
		t.Errorf("orphans %v still hold the claimed group %d", got, daemon.PGID)
	}
	ms := o.Members(c.Group)
	if !slices.ContainsFunc(ms, func(id proc.Identity) bool { return id.PID == daemon.PID }) {
		t.Errorf("the spawn's members %v do not include the claimed process %d", ms, daemon.PID)
	}
	if c.Leader.StartTime > early.StartTime && o.Unclaimed(c.Group) {
		t.Error("Unclaimed: true while the only orphan left is older than the spawn")
	}
	if o.Claim(c.Group, daemon.PID, "again") {
		t.Error("a process claimed already was claimed again")
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	testkit.Receive(t, 20*time.Second, exited, "the claimed process outlived its owner's Close")
}
