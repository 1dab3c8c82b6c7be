//go:build linux

package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
)

// forkingRuns is how many times TestForkingTogether plays each of its
// sizes (the bar is 100); forkingParallel how many runs (of any
// sizes) play at once, each with a hermesd, directories, ports and
// daemons' command lines of its own.
var (
	forkingRuns     = flag.Int("forking.runs", 1, "TestForkingTogether: how many times each size is played")
	forkingParallel = flag.Int("forking.parallel", 2, "TestForkingTogether: how many runs (of any sizes) play at once")
	forkingFor      = flag.Duration("forking.for", 0, "TestForkingTogether: start no run once this long has passed (0: no limit)")
)

// TestForkingTogether: two, five and ten `forking` units started together
// by one hermesd in each mode (nginx and redis daemonizing, and three
// kinds of daemonizing sh: a setsid child that keeps its environment, an
// env -i one, and one that writes its pid file), each unit's daemon
// re-parented to hermesd the moment its launcher exits. A daemon is a
// unit's only on evidence that names that unit (its tags, its mark, its
// pid file, its log): none is taken by another unit (no "escapee N …
// registering it" for a unit whose daemon N is not), none is held as no
// unit's (its group among status' orphans), and each unit's status names
// its own daemon. -forking.runs plays each size that many times; the test
// logs, per size, the runs, the misattributions (a unit that registered
// another's daemon), the units whose status named another pid than their
// own daemon's, and the daemons held as orphans. pgroup mode is where
// the evidence is hard to read (each daemon leaves its group); cgroup
// mode's row holds hermesd to the same table.
func TestForkingTogether(t *testing.T) {
	needsProcesses(t, "hermesd and daemons")
	slots := make(chan struct{}, max(*forkingParallel, 1))
	var until time.Time
	if *forkingFor > 0 {
		until = time.Now().Add(*forkingFor)
	}
	var table []*forkingResult
	t.Cleanup(func() {
		var b strings.Builder
		fmt.Fprintf(&b, "\n%-7s %-6s %5s %6s %16s %12s %9s\n", "mode", "units", "runs", "failed", "misattributions", "wrong status", "orphaned")
		for _, r := range table {
			r.mu.Lock()
			fmt.Fprintf(&b, "%-7s %-6d %5d %6d %16d %12d %9d\n", r.mode, r.n, r.runs, r.failed, r.took, r.wrong, r.orphaned)
			r.mu.Unlock()
		}
		t.Log(b.String())
	})
	var sizes sync.WaitGroup
	for _, mode := range supervisorModes {
		for _, n := range []int{2, 5, 10} {
			res := &forkingResult{mode: mode, n: n}
			table = append(table, res)
			sizes.Add(1)
			go func() {
				defer sizes.Done()
				t.Run(mode+"/"+strconv.Itoa(n), func(t *testing.T) {
					needMode(t, mode)
					forkingSize(t, res, slots, until)
				})
			}()
		}
	}
	sizes.Wait()
}

// forkingResult is one size's line of TestForkingTogether's table; its
// runs add to it under mu.
type forkingResult struct {
	mode              string
	n                 int
	mu                sync.Mutex
	runs, took, wrong int
	orphaned          int // units whose own daemon's group status listed among the orphans
	failed            int // runs that failed, at their end or before (a failure ends a run early)
}

// forkingSize plays size res.n -forking.runs times, each run a subtest
// that waits for one of slots (testkit.Plays); it stops starting runs once
// one failed, or once until (if set) passed.
func forkingSize(t *testing.T, res *forkingResult, slots chan struct{}, until time.Time) {
	failed := testkit.Plays(t, *forkingRuns, slots, until, func(t *testing.T) {
		took, wrong, orphaned := forkingRun(t, res.mode, res.n)
		res.mu.Lock()
		defer res.mu.Unlock()
		res.runs++
		res.took += took
		res.wrong += wrong
		res.orphaned += orphaned
	})
	res.mu.Lock()
	res.failed += failed
	res.mu.Unlock()
}

// forkingUnit is one unit of TestForkingTogether: its yaml, and how its
// own daemon is told (the pid it wrote, or its unique command line).
type forkingUnit struct {
	name, yaml string
	pidFile    string
	argv       string // the daemon's command line, when it writes no pid
	port       int
}

// forkingUnits are n forking units of kinds in turn; kinds whose program
// is missing are left out.
func forkingUnits(t *testing.T, dir string, n int) []forkingUnit {
	t.Helper()
	ports := testkit.FreePorts(t, n)
	seq := forkingSeq.Add(1) // runs at once never share a daemon's command line
	var out []forkingUnit
	for i := 0; len(out) < n; i++ {
		name := fmt.Sprintf("f%d", len(out))
		tok := fmt.Sprintf("5%02d%03d%05d", len(out), os.Getpid()%1000, seq)
		switch i % 5 {
		case 0:
			if program("nginx") == "" {
				continue
			}
			u := nginxUnit(t, name, dir, ports[len(out)], true, "")
			out = append(out, forkingUnit{name: name, yaml: u.yaml, pidFile: u.pidFile, port: u.port})
		case 1:
			if program("redis-server") == "" {
				continue
			}
			u := redisUnit(name, dir, ports[len(out)], true)
			out = append(out, forkingUnit{name: name, yaml: u.yaml, pidFile: u.pidFile, port: u.port})
		case 2: // keeps its tags
			out = append(out, forkingUnit{name: name, argv: "sleep " + tok,
				yaml: fmt.Sprintf("type: forking\ncommand: [/bin/sh, -c, 'setsid sleep %s & exit 0']\n", tok)})
		case 3: // erases them
			out = append(out, forkingUnit{name: name, argv: "sleep " + tok,
				yaml: fmt.Sprintf("type: forking\ncommand: [/bin/sh, -c, 'setsid env -i sleep %s & exit 0']\n", tok)})
		case 4: // writes its pid file
			pf := filepath.Join(dir, name+".pid")
			out = append(out, forkingUnit{name: name, pidFile: pf,
				yaml: fmt.Sprintf("type: forking\npid_file: %q\ncommand: [/bin/sh, -c, %q]\n", pf,
					fmt.Sprintf(`setsid sh -c 'echo $$ >"$0.tmp"; mv "$0.tmp" "$0"; exec sleep %s' %s & exit 0`, tok, pf))})
		}
	}
	return out
}

// forkingSeq numbers the runs of TestForkingTogether of this process.
var forkingSeq atomic.Int64

// forkingRun is one run of TestForkingTogether with n units. It returns
// the misattributions (a unit's registration of another's daemon), the
// units whose status named another pid than their own daemon's, and those
// whose own daemon's group status listed among the orphans (no unit's).
func forkingRun(t *testing.T, mode string, n int) (took, wrong, orphaned int) {
	t.Helper()
	dir := t.TempDir()
	us := forkingUnits(t, dir, n)
	files := map[string]string{}
	for _, u := range us {
		files[u.name+".yaml"] = u.yaml
	}
	testkit.WriteUnits(t, filepath.Join(dir, "units"), files)
	d := startDaemonWith(t, dir, daemonOpts{role: "gateway", mode: mode})
	st := d.waitStatus("every unit running", func(_ control.Status, u map[string]control.Unit) bool {
		for _, fu := range us {
			if x := u[fu.name]; x.State != "running" || x.PID == 0 {
				return false
			}
		}
		return true
	})
	failed := t.Failed()
	mains := map[int]string{}
	for _, fu := range us {
		want := ownDaemon(t, fu, st[fu.name].PID)
		mains[want] = fu.name
		if got := st[fu.name].PID; got != want {
			wrong++
			t.Errorf("%s: status names pid %d, want its own daemon %d", fu.name, got, want)
		}
	}
	// No unit's daemon is held as no unit's.
	orphans := d.fullStatus().Supervisor.Orphans
	for pid, name := range mains {
		if s, err := proc.ReadStat(pid); err == nil && slices.Contains(orphans, s.PGID) {
			orphaned++
			t.Errorf("%s: its daemon %d (group %d) is held as an orphan, no unit's (orphans %v)", name, pid, s.PGID, orphans)
		}
	}
	// No unit registered another unit's daemon as its escapee, nor
	// claimed it from the orphans.
	log, _ := os.ReadFile(filepath.Join(dir, "hermesd.log"))
	re := regexp.MustCompile(`supervisor: (\S+): (?:escapee|orphan) (\d+) \(group \d+\) (?:left its process group|is the unit's)`)
	for _, m := range re.FindAllStringSubmatch(string(log), -1) {
		pid, _ := strconv.Atoi(m[2])
		if owner, ok := mains[pid]; ok && owner != m[1] {
			took++
			t.Errorf("%s took %s's daemon %d: %s", m[1], owner, pid, m[0])
		}
	}
	if t.Failed() && !failed {
		t.Logf("hermesd log:\n%s", log)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	<-d.done
	return took, wrong, orphaned
}

// ownDaemon is the pid of fu's own daemon: the one its pid file names, or
// the one process running its command line; else (an nginx that wrote no
// pid yet) the holder of its port that leads a session. The command line
// is waited for: hermesd may find a daemon before it runs it (an env -i
// daemon is env until it execs sleep).
func ownDaemon(t *testing.T, fu forkingUnit, status int) int {
	t.Helper()
	if fu.pidFile != "" {
		return pidInFile(t, fu.pidFile, status)
	}
	var found []int
	testkit.Within(10*time.Second, func() bool {
		found = found[:0]
		pids, _ := proc.Find(func(st proc.Stat) bool { return !st.Zombie() })
		for _, pid := range pids {
			if argv, err := proc.Cmdline(pid); err == nil && strings.Join(argv, " ") == fu.argv {
				found = append(found, pid)
			}
		}
		return len(found) == 1
	})
	if len(found) != 1 {
		t.Errorf("%s: %d processes run %q, want one: %v", fu.name, len(found), fu.argv, found)
		return 0
	}
	return slices.Min(found)
}
