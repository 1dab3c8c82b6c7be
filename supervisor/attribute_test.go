package supervisor

import (
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
	"golang.org/x/sys/unix"
)

// TestAttributeOnEvidence: a daemon re-parented to the owner is a spawn's
// only on evidence that names that spawn, never because its launcher
// exited just before it appeared, nor because a spawn started just before
// it (the guesses that gave two forking units started together each
// other's daemons). Each daemon here has an erased environment, stdio
// /dev/null and a session of its own (or its launcher's, below); two spawns started just before it,
// one of whose launchers has just exited.
//   - no evidence: no spawn's (the scan registers it as an orphan);
//   - its mark: the marked spawn, whatever the order of the spawns;
//   - the session a spawn leads: that spawn.
func TestAttributeOnEvidence(t *testing.T) {
	o := newTestOwner(t, Options{Mode: ModePGroup})
	defer o.Close()
	tests := []struct {
		name   string
		mark   bool // the daemon carries the other spawn's mark
		inSess bool // the daemon stays in the session the other spawn leads
		want   string
	}{
		{name: "no evidence", want: ""},
		{name: "mark", mark: true, want: "web"},
		{name: "session", inSess: true, want: "web"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.mark && runtime.GOOS != "linux" {
				t.Skip("marks are Linux's")
			}
			// The daemon's session is led by a shell that is its parent
			// (the session a spawn leads), or is its own (setsid): both
			// made here, so that neither is the test's own session,
			// which may have been made outside this PID namespace and
			// read as 0 (no evidence).
			script := `setsid env -i sleep 1000 </dev/null >/dev/null 2>&1 & echo $!; wait`
			if tt.inSess {
				script = `env -i sleep 1000 </dev/null >/dev/null 2>&1 & echo $!; wait`
			}
			leader := exec.Command("sh", "-c", script)
			leader.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			out := testkit.StartOutput(t, leader)
			t.Cleanup(func() { syscall.Kill(-leader.Process.Pid, syscall.SIGKILL) })
			line, err := out.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(line))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
			wantSID := leader.Process.Pid
			if !tt.inSess {
				wantSID = pid
			}
			var st proc.Stat
			testkit.Eventually(t, 10*time.Second, fmt.Sprintf("daemon %d in session %d", pid, wantSID), func() bool {
				st, err = proc.ReadStat(pid)
				return err == nil && st.SID == wantSID
			})
			// launcher's leader has exited (not in the table), its
			// waiter has not run yet (still in leaders); web started
			// just before the daemon forked.
			// The launcher's pid is made up: never the real leader of
			// the daemon's session (the daemon is not always the next
			// pid after it on a busy machine), which would be evidence.
			lp := st.PID - 2
			if lp == st.SID {
				lp--
			}
			launcher := &reg{id: "s1", key: "1_1_1", g: Group{Unit: "nginx", PGID: lp, Leader: proc.Identity{PID: lp}}, session: lp}
			web := &reg{id: "s2", key: "1_1_2", g: Group{Unit: "web", PGID: st.PID - 1, Leader: proc.Identity{PID: st.PID - 1}}, session: st.PID - 1}
			if tt.mark {
				m, _ := markOf(web.key)
				if err := setMark(pid, m); err != nil {
					t.Fatal(err)
				}
				web.mark = m
			}
			if tt.inSess {
				web.session = st.SID
			}
			o.mu.Lock()
			o.regs = map[string]*reg{launcher.id: launcher, web.id: web}
			o.leaders = map[int]bool{launcher.g.Leader.PID: true, web.g.Leader.PID: true}
			sn := o.snapshotLocked()
			o.regs = map[string]*reg{}
			o.leaders = map[int]bool{}
			o.mu.Unlock()
			got, _ := o.attribute(st, sn)
			name := ""
			if got != nil {
				name = got.g.Unit
			}
			if name != tt.want {
				t.Errorf("the daemon was attributed to %q, want %q", name, tt.want)
			}
		})
	}
}

// TestMarkOf: a spawn key's mark is below RLIM_INFINITY, differs with
// each field, and a key of another shape has none.
func TestMarkOf(t *testing.T) {
	seen := map[uint64]string{}
	for _, k := range []string{"1_1_1", "1_1_2", "2_1_1", "1_2_1", "4194303_8191_268435455", "4194303_9999999_1"} {
		m, ok := markOf(k)
		if !ok || m == 0 || m >= 1<<63 {
			t.Errorf("markOf(%q) = %d, %v; want a mark in (0, 2^63)", k, m, ok)
		}
		if o, dup := seen[m]; dup {
			t.Errorf("markOf(%q) = markOf(%q) = %d", k, o, m)
		}
		seen[m] = k
	}
	for _, k := range []string{"", "-", "1_1", "a_1_1", "0_1_1", "4194304_1_1", "1_1_1_1"} {
		if m, ok := markOf(k); ok {
			t.Errorf("markOf(%q) = %d, want none", k, m)
		}
	}
}

// TestOrphanContained: a process re-parented to the owner that no
// evidence names (no tags, no mark, stdio not a log, a session of its
// own) is an orphan: registered under no unit, listed by Status, and
// killed with the owner all the same.
func TestOrphanContained(t *testing.T) {
	o := newTestOwner(t, Options{Mode: ModePGroup, Grace: testGrace})
	defer o.Close()
	// A child of this process (the owner): as if re-parented to it.
	st, exited := detachedChild(t)
	web := &reg{id: "s1", key: "1_1_1", g: Group{Unit: "web", PGID: st.PID - 1, Leader: proc.Identity{PID: st.PID - 1}}, session: st.PID - 1}
	o.mu.Lock()
	o.regs[web.id] = web
	sn := o.snapshotLocked()
	delete(o.regs, web.id)
	o.mu.Unlock()
	mySID, _ := unix.Getsid(0)
	r, orphan := o.escapeeOf(sn, st, map[int]*reg{}, mySID)
	if r != nil || !orphan {
		t.Fatalf("escapeeOf: got %v, orphan %v; want no unit's, an orphan", r, orphan)
	}
	e := o.adoptOrphan(st)
	if e == nil {
		t.Fatal("the orphan was not registered")
	}
	<-e.answered
	if got := o.Status().Orphans; len(got) != 1 || got[0] != st.PGID {
		t.Errorf("Status().Orphans: got %v, want [%d]", got, st.PGID)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	testkit.Receive(t, 10*time.Second, exited, "the orphan outlived its owner's Close")
}
