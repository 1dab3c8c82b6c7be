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
	"syscall"
	"testing"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
)

// forkingRuns is how many times TestForkingTogether plays each of its
// sizes (the bar is 100).
var forkingRuns = flag.Int("forking.runs", 1, "TestForkingTogether: how many times each size is played")

// TestForkingTogether: two, five and ten `forking` units started together
// by one hermesd in pgroup mode (nginx and redis daemonizing, and three
// kinds of daemonizing sh: a setsid child that keeps its environment, an
// env -i one, and one that writes its pid file), each unit's daemon
// re-parented to hermesd the moment its launcher exits. A daemon is a
// unit's only on evidence that names that unit (its tags, its mark, its
// pid file, its log): none is taken by another unit (no "escapee N …
// registering it" for a unit whose daemon N is not), and each unit's
// status names its own daemon. -forking.runs plays each size that many
// times.
func TestForkingTogether(t *testing.T) {
	if testing.Short() {
		t.Skip("starts hermesd and daemons")
	}
	for _, n := range []int{2, 5, 10} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			for run := range *forkingRuns {
				if !forkingRun(t, n) {
					t.Fatalf("run %d of %d failed", run+1, *forkingRuns)
				}
			}
		})
	}
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
	var out []forkingUnit
	for i := 0; len(out) < n; i++ {
		name := fmt.Sprintf("f%d", len(out))
		tok := strconv.Itoa(500000 + len(out)*1000 + os.Getpid()%1000)
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

// forkingRun is one run of TestForkingTogether with n units; false when
// it failed.
func forkingRun(t *testing.T, n int) bool {
	t.Helper()
	dir := t.TempDir()
	us := forkingUnits(t, dir, n)
	files := map[string]string{}
	for _, u := range us {
		files[u.name+".yaml"] = u.yaml
	}
	testkit.WriteUnits(t, filepath.Join(dir, "units"), files)
	d := startDaemonWith(t, dir, daemonOpts{role: "gateway", mode: "pgroup"})
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
			t.Errorf("%s: status names pid %d, want its own daemon %d", fu.name, got, want)
		}
	}
	// No unit registered another unit's daemon as its escapee.
	log, _ := os.ReadFile(filepath.Join(dir, "hermesd.log"))
	re := regexp.MustCompile(`supervisor: (\S+): escapee (\d+) \(group \d+\) left its process group`)
	for _, m := range re.FindAllStringSubmatch(string(log), -1) {
		pid, _ := strconv.Atoi(m[2])
		if owner, ok := mains[pid]; ok && owner != m[1] {
			t.Errorf("%s took %s's daemon %d: %s", m[1], owner, pid, m[0])
		}
	}
	if t.Failed() && !failed {
		t.Logf("hermesd log:\n%s", log)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	<-d.done
	return !t.Failed()
}

// ownDaemon is the pid of fu's own daemon: the one its pid file names, or
// the one process running its command line; else (an nginx that wrote no
// pid yet) the holder of its port that leads a session.
func ownDaemon(t *testing.T, fu forkingUnit, status int) int {
	t.Helper()
	if fu.pidFile != "" {
		return pidInFile(t, fu.pidFile, status)
	}
	pids, _ := proc.Find(func(st proc.Stat) bool { return !st.Zombie() })
	var found []int
	for _, pid := range pids {
		if argv, err := proc.Cmdline(pid); err == nil && strings.Join(argv, " ") == fu.argv {
			found = append(found, pid)
		}
	}
	if len(found) != 1 {
		t.Errorf("%s: %d processes run %q, want one: %v", fu.name, len(found), fu.argv, found)
		return 0
	}
	return slices.Min(found)
}
