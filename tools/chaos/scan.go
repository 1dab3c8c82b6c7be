package main

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/proc"
)

// marked is a live process of one of the harness's units, found in /proc by
// the environment tags the harness gives every unit (envRun, inherited from
// hermesd; CHAOS_UNIT, from the unit file).
type marked struct {
	pid, pgid int
	start     uint64
	unit      string
	argv      []string
}

// escapee reports whether m is the escapee unit's setsid'd process: "sleep
// 100001", or "setsid sleep 100001" between setsid(2) and its exec of sleep,
// when it already leads its own group.
func (m marked) escapee() bool { return len(m.argv) > 1 && m.argv[len(m.argv)-1] == escapeeArg }

func (m marked) String() string {
	return m.unit + " pid " + strconv.Itoa(m.pid) + " pgid " + strconv.Itoa(m.pgid) + " (" + strings.Join(m.argv, " ") + ")"
}

// scan lists the live (non-zombie) processes carrying run's tag.
func scan(run string) []marked {
	pids, _ := proc.Pids()
	tag := envRun + "=" + run
	var out []marked
	for _, pid := range pids {
		env, err := environ(pid)
		if err != nil || !slices.Contains(env, tag) {
			continue
		}
		unit := ""
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, "CHAOS_UNIT="); ok {
				unit = v
			}
		}
		if unit == "" {
			continue // hermesd itself, or the harness's own helpers
		}
		st, err := proc.ReadStat(pid)
		if err != nil || st.Zombie() {
			continue // a zombie is dead: this machine's init may never reap orphans
		}
		argv, _ := proc.Cmdline(pid)
		out = append(out, marked{pid: pid, pgid: st.PGID, start: st.StartTime, unit: unit, argv: argv})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pid < out[j].pid })
	return out
}

// environ reads pid's environment. A process in the middle of an exec has
// an empty one for a moment (the new image's is set up after the switch to
// its memory, once its segments and interpreter are mapped): a unit's shell
// exec'ing its program (notify's "exec sleep" right after READY=1) would be
// missed by a scan. A live process that is not a kernel thread (their
// parent is kthreadd, pid 2) and shows an empty environment is read again,
// a millisecond apart, for up to execBound while its arguments are not set
// up either (the exec is not over: on a loaded machine that has lasted past
// 20 ms), and 20 times once they are: a process whose environment is empty
// for good (started by env -i) costs a scan 20 ms, not execBound.
func environ(pid int) ([]string, error) {
	env, err := proc.Environ(pid)
	settled := 0 // reads that found its arguments set up
	for deadline := time.Now().Add(execBound); err == nil && len(env) == 0 && time.Now().Before(deadline); {
		st, serr := proc.ReadStat(pid)
		if serr != nil || st.Zombie() || pid == 2 || st.PPID == 2 {
			break
		}
		if argv, _ := proc.Cmdline(pid); len(argv) > 0 {
			if settled++; settled > 20 {
				break
			}
		}
		time.Sleep(time.Millisecond)
		env, err = proc.Environ(pid)
	}
	return env, err
}

// execBound is how long a scan waits for a process's environment to
// appear (see environ).
const execBound = 2 * time.Second

// describePID says what /proc shows of pid, for a violation's message: its
// command, state, parent and group, and the size of its environment.
func describePID(pid int) string {
	st, err := proc.ReadStat(pid)
	if err != nil {
		return fmt.Sprintf("pid %d: gone (%v)", pid, err)
	}
	env, err := proc.Environ(pid)
	return fmt.Sprintf("pid %d: %s, state %c, ppid %d, pgid %d, %d environment entries (err %v)", pid, st.Comm, st.State, st.PPID, st.PGID, len(env), err)
}

// groups maps each unit to the process groups its live processes are in
// (the escapee's setsid'd process excluded), and each group to its leader
// when the leader is among them.
func groups(ps []marked) (byUnit map[string][]int, leaders map[int]marked) {
	byUnit, leaders = map[string][]int{}, map[int]marked{}
	for _, p := range ps {
		if p.escapee() {
			continue
		}
		if !slices.Contains(byUnit[p.unit], p.pgid) {
			byUnit[p.unit] = append(byUnit[p.unit], p.pgid)
		}
		if p.pid == p.pgid {
			leaders[p.pgid] = p
		}
	}
	return byUnit, leaders
}

// killAll sends SIGKILL to every process of ps.
func killAll(ps []marked) {
	for _, p := range ps {
		syscall.Kill(p.pid, syscall.SIGKILL)
	}
}

func ofKind(ps []marked, k kind) []marked {
	var out []marked
	for _, p := range ps {
		if d, ok := defOf(p.unit); ok && d.kind == k {
			out = append(out, p)
		}
	}
	return out
}
