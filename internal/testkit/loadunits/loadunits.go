// Package loadunits is the units of the load checks (cmd/hermesd's
// TestLoadEditsApplied and the load section of tools/bench): coreutils
// sleep, not a test binary (hundreds of race-instrumented helpers would
// cost gigabytes), tagged through Env with their run and unit, and found
// again by a scan of /proc. sleep sums its arguments, so the generation of
// the unit file a process runs rides in its argv.
package loadunits

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/proc"
)

// Env tags each unit process with "<tag>/<unit>": tag names one run.
const Env = "HERMES_LOAD_UNIT"

// YAML is generation gen of the unit file of name, in the run tag.
func YAML(tag, name string, gen int) []byte {
	return fmt.Appendf(nil, "command: [sleep, \"100000\", \"%d\"]\nenv: {%s: %q}\ntimeouts: {stop: 5s}\n", gen, Env, tag+"/"+name)
}

// Save writes the unit file of name in dir as editors do: a temp file
// renamed onto it.
func Save(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+".yaml.tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name+".yaml"))
}

// Process is one unit process found in /proc.
type Process struct {
	PID, PGID int
	Start     uint64
	Unit      string
	Gen       int
}

// Read reads pid as a unit process of the run tag; ok is false for any
// other process, a zombie, or a spawn not yet exec'd into sleep.
func Read(tag string, pid int) (p Process, ok bool) {
	argv, err := proc.Cmdline(pid)
	if err != nil || len(argv) != 3 || argv[0] != "sleep" {
		return p, false
	}
	env, err := proc.Environ(pid)
	if err != nil {
		return p, false
	}
	for _, kv := range env {
		if u, found := strings.CutPrefix(kv, Env+"="+tag+"/"); found {
			p.Unit = u
		}
	}
	st, err := proc.ReadStat(pid)
	if p.Unit == "" || err != nil || st.Zombie() {
		return p, false
	}
	if p.Gen, err = strconv.Atoi(argv[2]); err != nil {
		return p, false
	}
	p.PID, p.PGID, p.Start = pid, st.PGID, st.StartTime
	return p, true
}

// Scan lists the unit processes of the run tag.
func Scan(tag string) []Process {
	pids, _ := proc.Pids()
	var out []Process
	for _, pid := range pids {
		if p, ok := Read(tag, pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// Duplicates returns the processes, one list a unit, of each unit of ps
// (a Scan) seen in two process groups or more, once confirmed: all are
// read again in the order first read, and if all are still the same
// processes, all were alive at the moment the first one was read again.
func Duplicates(tag string, ps []Process) [][]Process {
	by := map[string][]Process{}
	for _, p := range ps {
		by[p.Unit] = append(by[p.Unit], p)
	}
	var dups [][]Process
	for _, group := range by {
		pgids := map[int]bool{}
		for _, p := range group {
			pgids[p.PGID] = true
		}
		if len(pgids) < 2 {
			continue
		}
		same := true
		for _, p := range group {
			q, ok := Read(tag, p.PID)
			same = same && ok && q.Start == p.Start
		}
		if same {
			dups = append(dups, group)
		}
	}
	return dups
}

// Running returns, by unit, the process of each unit that st says runs,
// when the process at the pid st gives is a unit process of the run tag.
func Running(st control.Status, tag string) map[string]Process {
	running := map[string]Process{}
	for _, u := range st.Units {
		if u.State != control.StateRunning || u.PID == 0 {
			continue
		}
		if p, ok := Read(tag, u.PID); ok && p.Unit == u.Name {
			running[u.Name] = p
		}
	}
	return running
}
