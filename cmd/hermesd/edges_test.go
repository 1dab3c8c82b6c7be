package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/units"
	"golang.org/x/sys/unix"
)

// The edges of the containment promise (issue 10): an escapee that erases
// its environment, hermesd killed together with its supervisor, a released
// survivor declared again, a ledger entry that names a stranger. Each runs
// in both supervisor modes where the machine has them; the rows join the
// survivors matrix (TestGatewaySurvivors).

// supervisorModes are the modes the edge rows run in: pgroup always,
// cgroup where a writable cgroup v2 hierarchy exists (needMode says why a
// cgroup row is skipped).
var supervisorModes = []string{"cgroup", "pgroup"}

// needMode skips a cgroup row on a machine without a writable cgroup v2
// hierarchy; pgroup rows run everywhere.
func needMode(t *testing.T, mode string) {
	t.Helper()
	if mode != "cgroup" {
		return
	}
	m := proc.CgroupMount()
	if m == "" || unix.Access(m, unix.W_OK) != nil {
		t.Skipf("no writable cgroup v2 hierarchy (mount %q): cgroup mode cannot run here; the pgroup row covers the fallback", m)
	}
}

// shellUnit writes a unit that runs script with /bin/sh.
func shellUnit(t *testing.T, dir, name, script, ownership string) {
	t.Helper()
	testkit.WriteUnits(t, filepath.Join(dir, "units"), map[string]string{name + ".yaml": fmt.Sprintf("shell: %q\n", script) + ownershipYAML(ownership)})
}

// killWithSupervisor kills hermesd and its death supervisor together: hermesd
// is stopped first, so that it cannot see the supervisor die and start
// another one before its own death.
func (d *hermesd) killWithSupervisor() {
	d.t.Helper()
	sup := d.fullStatus().Supervisor.PID
	if sup == 0 {
		d.t.Fatalf("no supervisor runs: nothing to kill with hermesd")
	}
	supID, err := proc.Read(sup)
	if err != nil {
		d.t.Fatal(err)
	}
	d.cmd.Process.Signal(syscall.SIGSTOP)
	syscall.Kill(sup, syscall.SIGKILL)
	d.cmd.Process.Kill()
	<-d.done
	if !goneWithin(supID, 10*time.Second) {
		d.t.Fatalf("supervisor %d still alive after SIGKILL", sup)
	}
}

// copies lists the live leaders of unit's groups spawned for state (each a
// copy of the unit), found by their tags in /proc.
func copies(t *testing.T, state, unit string) []proc.Identity {
	t.Helper()
	l, err := ledger.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	pids, err := proc.Find(func(s proc.Stat) bool { return s.PID == s.PGID })
	if err != nil {
		t.Fatal(err)
	}
	var out []proc.Identity
	for _, pid := range pids {
		env, err := proc.Environ(pid)
		if err != nil || !slices.Contains(env, ledger.EnvUnit+"="+unit) || !slices.Contains(env, ledger.EnvState+"="+l.Dir()) {
			continue
		}
		if id, err := proc.Read(pid); err == nil {
			out = append(out, id)
		}
	}
	return out
}

// byArgv finds the live process whose command line is argv, other than
// not, with a deadline.
func byArgv(t *testing.T, argv []string, not proc.Identity, d time.Duration) proc.Identity {
	t.Helper()
	var found proc.Identity
	testkit.Eventually(t, d, fmt.Sprintf("a process %q", argv), func() bool {
		pids, _ := proc.Find(func(proc.Stat) bool { return true })
		for _, pid := range pids {
			if a, err := proc.Cmdline(pid); err == nil && slices.Equal(a, argv) {
				if id, err := proc.Read(pid); err == nil && id != not {
					found = id
					return true
				}
			}
		}
		return false
	})
	return found
}

// uniqueSleep is a sleep argument no other test on the machine uses, to
// find the process by its command line.
func uniqueSleep() string { return fmt.Sprintf("3000.%09d", rand.IntN(1e9)) }

// edgeRow is one row of the edge matrix: it runs in dir (a fresh gateway's
// units and state) and returns the survivors it expected and found.
type edgeRow struct {
	family   string
	expected string
	run      func(t *testing.T, mode, dir string) (found string)
}

var edgeRows = []edgeRow{
	{"escapee, env erased, under a live leader", "0 (dies; stop waits)", escapeeRow("setsid env -i sleep %s & exec sleep 2000")},
	{"escapee, env erased, re-parented to hermesd", "0 (dies; stop waits)", escapeeRow("(setsid env -i sleep %s &); exec sleep 2000")},
	{"hermesd and supervisor killed together", "0 duplicates", deadOwnerRow},
	{"released survivor declared again", "1 (adopted back)", releasedRow},
	{"survivor's leader gone, its child left", "0 duplicates", remainsRow},
	{"owned leader gone, its child left, hermesd and supervisor killed", "0 duplicates", ownedRemainsRow},
}

// escapeeRow (point 3): a unit's descendant leaves its group and erases
// its environment (setsid env -i sleep), under its live leader or
// re-parented to hermesd. `stop` waits until it is gone; a second copy,
// left running, dies with hermesd's SIGKILL.
func escapeeRow(script string) func(t *testing.T, mode, dir string) string {
	return func(t *testing.T, mode, dir string) string {
		arg := uniqueSleep()
		shellUnit(t, dir, "esc", fmt.Sprintf(script, arg), "owned")
		d := startDaemonWith(t, dir, daemonOpts{role: "gateway", mode: mode})
		c := d.client()
		escapee := byArgv(t, []string{"sleep", arg}, proc.Identity{}, 10*time.Second)
		killGroupAtEnd(t, escapee)
		if err := c.Stop(t.Context(), "esc"); err != nil {
			t.Fatalf("stop esc: %v", err)
		}
		if escapee.Alive() {
			t.Errorf("stop said the unit stopped while its escapee %d (setsid env -i) still runs", escapee.PID)
		}
		// Again, left running; then hermesd's SIGKILL.
		if err := c.Start(t.Context(), "esc"); err != nil {
			t.Fatalf("start esc: %v", err)
		}
		escapee2 := byArgv(t, []string{"sleep", arg}, escapee, 10*time.Second)
		killGroupAtEnd(t, escapee2)
		if mode == "pgroup" {
			// The registration is what makes it die: wait until hermesd
			// found it (a SIGCHLD, or its periodic look) and its
			// supervisor acknowledged it, as logged.
			if !fileHas(filepath.Join(dir, "hermesd.log"), fmt.Sprintf("escapee %d (group %d) registered", escapee2.PID, escapee2.PID), 20*time.Second) {
				b, _ := os.ReadFile(filepath.Join(dir, "hermesd.log"))
				t.Fatalf("hermesd did not register the escapee %d within 20s; its log:\n%s", escapee2.PID, b)
			}
		}
		d.kill()
		gone := goneWithin(escapee2, 10*time.Second)
		if !gone {
			t.Errorf("escapee %d (env erased) survived hermesd's SIGKILL", escapee2.PID)
		}
		return fmt.Sprintf("stop: %s, kill: %s", aliveWord(escapee), aliveWord(escapee2))
	}
}

// deadOwnerRow (point 4): hermesd and its supervisor are killed together;
// the owned units live on. The next gateway ends the one whose unit it
// starts (no duplicate), says so in status, and leaves the one whose unit
// is gone to `adopt --orphans`, counted.
func deadOwnerRow(t *testing.T, mode, dir string) string {
	state := filepath.Join(dir, "state")
	writeUnits(t, dir, map[string]string{"web": "owned", "old": "owned"})
	d := startDaemonWith(t, dir, daemonOpts{role: "gateway", mode: mode})
	web, old := leaderOf(t, state, "web"), leaderOf(t, state, "old")
	killGroupAtEnd(t, web)
	killGroupAtEnd(t, old)
	// Their output goes through hermesd (stamped logs): a line written
	// once both are dead would meet a pipe nobody reads (SIGPIPE). The
	// row is about what the next gateway does, so the units have said
	// what they say at their start before the kill.
	units := d.status()
	for name, id := range map[string]proc.Identity{"web": web, "old": old} {
		if want := fmt.Sprintf("started %d", id.PID); !fileHas(units[name].Log, want, 10*time.Second) {
			t.Fatalf("%s has no %q", units[name].Log, want)
		}
	}
	d.killWithSupervisor()
	if !web.Alive() || !old.Alive() {
		t.Fatalf("owned units died with hermesd and its supervisor killed together (web %v, old %v): nothing left to test", web.Alive(), old.Alive())
	}
	if err := os.Remove(filepath.Join(dir, "units", "old.yaml")); err != nil {
		t.Fatal(err)
	}
	d2 := startDaemonWith(t, dir, daemonOpts{role: "gateway", mode: mode})
	if !goneWithin(web, 10*time.Second) {
		t.Errorf("the dead hermesd's web (pid %d) still runs beside the new gateway's", web.PID)
	}
	u := d2.waitStatus("web running", func(_ control.Status, u map[string]control.Unit) bool { return runs(u, "web") })
	if cs := copies(t, state, "web"); len(cs) != 1 || cs[0].PID != u["web"].PID {
		t.Errorf("copies of web: %v, want one, pid %d", cs, u["web"].PID)
	}
	st := d2.fullStatus()
	rec := st.Recovery
	switch {
	case rec == nil:
		t.Errorf("status has no recovery, want web's group listed as ended and 1 leftover")
	default:
		if len(rec.Ended) != 1 || rec.Ended[0].Unit != "web" || rec.Ended[0].PID != web.PID || rec.Ended[0].Error != "" {
			t.Errorf("status recovery ended %+v, want web pid %d ended", rec.Ended, web.PID)
		}
		if rec.Leftovers != 1 {
			t.Errorf("status recovery leftovers %d, want 1 (old, no longer declared)", rec.Leftovers)
		}
	}
	if !old.Alive() {
		t.Errorf("old (no longer declared) was killed; want it left for adopt --orphans")
	}
	if !fileHas(filepath.Join(dir, "hermesd.log"), "ended a group left by a dead hermesd", 5*time.Second) {
		t.Errorf("hermesd's log does not say it ended the dead hermesd's web")
	}
	return fmt.Sprintf("old web %s, web copies %d, old leftover %s", aliveWord(web), len(copies(t, state, "web")), aliveWord(old))
}

// releasedRow (point 5): a persist_on_release survivor whose file is gone
// when a gateway starts is released; its file restored, it is adopted
// back, never doubled: by the running gateway (a reload), and by a
// gateway that starts with the file restored.
func releasedRow(t *testing.T, mode, dir string) string {
	state := filepath.Join(dir, "state")
	keepFile := filepath.Join(dir, "units", "keep.yaml")
	writeUnits(t, dir, map[string]string{"keep": "persist_on_release", "web": "owned"})
	saved, err := os.ReadFile(keepFile)
	if err != nil {
		t.Fatal(err)
	}
	d := startDaemonWith(t, dir, daemonOpts{role: "gateway", mode: mode})
	keep := leaderOf(t, state, "keep")
	killGroupAtEnd(t, keep)
	released := func(d *hermesd) {
		t.Helper()
		d.waitStatus("keep released", func(_ control.Status, u map[string]control.Unit) bool {
			return u["keep"].State == "released" && u["keep"].PID == keep.PID
		})
	}
	adoptedBack := func(d *hermesd, how string) {
		t.Helper()
		u := d.waitStatus("keep adopted back", func(_ control.Status, u map[string]control.Unit) bool { return runs(u, "keep") })
		if u["keep"].PID != keep.PID || !u["keep"].Adopted {
			t.Errorf("%s: keep pid %d adopted %v, want the released pid %d adopted back", how, u["keep"].PID, u["keep"].Adopted, keep.PID)
		}
		if cs := copies(t, state, "keep"); len(cs) != 1 {
			t.Errorf("%s: %d copies of keep run (%v), want 1", how, len(cs), cs)
		}
	}

	// Removed while no gateway runs: the next one releases it; restored,
	// the running gateway adopts it back.
	d.kill()
	os.Remove(keepFile)
	d = startDaemonWith(t, dir, daemonOpts{role: "gateway", mode: mode})
	released(d)
	atomicSave(t, keepFile, string(saved))
	adoptedBack(d, "restored under a running gateway")

	// Released again, and restored before the next gateway starts: it
	// adopts it back at its start.
	d.kill()
	os.Remove(keepFile)
	d = startDaemonWith(t, dir, daemonOpts{role: "gateway", mode: mode})
	released(d)
	d.kill()
	atomicSave(t, keepFile, string(saved))
	d = startDaemonWith(t, dir, daemonOpts{role: "gateway", mode: mode})
	adoptedBack(d, "restored before a gateway's start")
	return fmt.Sprintf("keep pid %s, copies %d", aliveWord(keep), len(copies(t, state, "keep")))
}

func aliveWord(id proc.Identity) string {
	if id.Alive() {
		return "alive"
	}
	return "gone"
}

// TestLedgerIsEvidence (point 7): a ledger entry whose leader is a
// stranger (no spawn key), or whose cgroup is not a hermes cgroup of that
// spawn, or does not hold its leader, is never re-adopted nor signalled:
// the gateway spawns its own copy, `stop` stops that one, and the
// stranger lives.
func TestLedgerIsEvidence(t *testing.T) {
	needsProcesses(t, "hermesd processes")
	dead := func(t *testing.T) proc.Identity {
		id := external(t)
		syscall.Kill(-id.PID, syscall.SIGKILL)
		if !goneWithin(id, 5*time.Second) {
			t.Fatal("the stand-in for a dead owner does not die")
		}
		return id
	}
	// cgroupOf makes a cgroup named name below the v2 mount, moves pid
	// into it, and removes it at the end.
	cgroupOf := func(t *testing.T, name string, pid int) string {
		t.Helper()
		m := proc.CgroupMount()
		dir := filepath.Join(m, name)
		if err := os.MkdirAll(dir, 0o755); err != nil || m == "" {
			t.Skipf("cannot make cgroup %s (%v): this case needs a writable cgroup v2 hierarchy", dir, err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			t.Skipf("cannot move a process into %s: %v", dir, err)
		}
		t.Cleanup(func() {
			syscall.Kill(pid, syscall.SIGKILL)
			testkit.Within(5*time.Second, func() bool { err := os.Remove(dir); return err == nil || os.IsNotExist(err) })
			os.Remove(filepath.Dir(dir))
		})
		return dir
	}
	const key = "1_1_1"
	tests := []struct {
		name, ownership string
		craft           func(t *testing.T, stranger proc.Identity) (cgroup string, others []proc.Identity)
	}{
		{"a stranger as survivor leader", "persist_on_release", func(*testing.T, proc.Identity) (string, []proc.Identity) { return "", nil }},
		{"a stranger as a dead gateway's owned leader", "owned", func(*testing.T, proc.Identity) (string, []proc.Identity) { return "", nil }},
		{"a cgroup outside hermes", "persist_on_release", func(t *testing.T, s proc.Identity) (string, []proc.Identity) {
			return cgroupOf(t, fmt.Sprintf("victim-%d", s.PID), s.PID), nil
		}},
		{"a hermes-shaped cgroup without its leader", "persist_on_release", func(t *testing.T, s proc.Identity) (string, []proc.Identity) {
			other := external(t)
			return cgroupOf(t, filepath.Join("hermes-kept", "web."+key), other.PID), []proc.Identity{other}
		}},
	}
	for _, mode := range supervisorModes {
		for _, tc := range tests {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				needMode(t, mode)
				dir := t.TempDir()
				state := filepath.Join(dir, "state")
				writeUnits(t, dir, map[string]string{"web": tc.ownership})
				stranger := external(t)
				cg, others := tc.craft(t, stranger)
				l, err := ledger.Open(state)
				if err != nil {
					t.Fatal(err)
				}
				if err := l.Add(t.Context(), ledger.Entry{Unit: "web", Leader: stranger, PGID: stranger.PID, Cgroup: cg,
					Owner: dead(t), Role: "gateway", Ownership: units.Ownership(tc.ownership), Spawn: key, Spawned: time.Now()}); err != nil {
					t.Fatal(err)
				}
				d := startDaemonWith(t, dir, daemonOpts{role: "gateway", mode: mode})
				u := d.waitStatus("web running", func(_ control.Status, u map[string]control.Unit) bool { return runs(u, "web") })
				if u["web"].PID == stranger.PID || u["web"].Adopted {
					t.Errorf("web: pid %d adopted %v, want a fresh spawn, not the stranger %d", u["web"].PID, u["web"].Adopted, stranger.PID)
				}
				if err := d.client().Stop(t.Context(), "web"); err != nil {
					t.Fatalf("stop web: %v", err)
				}
				for _, id := range append([]proc.Identity{stranger}, others...) {
					if !id.Alive() {
						t.Errorf("process %d, named by a crafted ledger entry, was killed", id.PID)
					}
				}
				if !fileHas(filepath.Join(dir, "hermesd.log"), "the kernel contradicts its ledger entry", 5*time.Second) {
					t.Errorf("hermesd's log does not say why the entry was left alone")
				}
			})
		}
	}
}

// edgeMatrix runs the edge rows in each mode, beside a live control owner
// of the same mode whose unit must stay alive.
func edgeMatrix(t *testing.T, add func(family, owner, expected, found string)) {
	for _, mode := range supervisorModes {
		t.Run(mode, func(t *testing.T) {
			needMode(t, mode)
			ctlDir := t.TempDir()
			writeUnits(t, ctlDir, map[string]string{"control": "owned"})
			startDaemonWith(t, ctlDir, daemonOpts{role: "gateway", mode: mode})
			ctl := leaderOf(t, filepath.Join(ctlDir, "state"), "control")
			for _, r := range edgeRows {
				t.Run(strings.ReplaceAll(r.family, " ", "_"), func(t *testing.T) {
					found := r.run(t, mode, t.TempDir())
					add(r.family+" ("+mode+")", "gateway", r.expected, found)
					if !ctl.Alive() {
						t.Fatalf("the control hermesd's unit died: the row was not confined to its own owner")
					}
				})
			}
			add("control owner's unit ("+mode+")", "gateway", "1 (alive)", aliveWord(ctl))
		})
	}
}

// runs reports whether unit name is running in u.
func runs(u map[string]control.Unit, name string) bool {
	x, ok := u[name]
	return running(x, ok)
}
