package supervisor

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
)

// TestMembersListsOnlyRegistered: in pgroup mode, Members lists an
// escapee it found (a forking unit's daemon, whose pid becomes the unit's
// main pid) only once the supervisor has answered its registration: from
// then on it dies with the owner. With the supervisor stopped, Members
// does not return in the moment after it found the escapee; once the
// supervisor reads again, it returns with the escapee listed.
func TestMembersListsOnlyRegistered(t *testing.T) {
	marker := newMarker(t, "members")
	var logged testkit.Lines
	o := newTestOwner(t, Options{Mode: ModePGroup, Grace: testGrace, Logf: logged.Logf})
	t.Cleanup(func() { o.Close() })
	gateR, gateW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer gateR.Close()
	defer gateW.Close()
	c, err := o.SpawnOwned(t.Context(), Spec{Unit: "d", Argv: []string{"sh", "-c", "read -r _; setsid sleep 1000 & exec sleep 1000"},
		Env: append(os.Environ(), envRow+"="+marker), Stdin: gateR})
	if err != nil {
		t.Fatal(err)
	}
	sup := o.Status().PID
	if err := syscall.Kill(sup, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(sup, syscall.SIGCONT) })
	gateW.WriteString("go\n") // the daemon leaves the group now
	found := func() bool { return len(logged.Matching("left its process group; registering it")) > 0 }
	testkit.Eventually(t, 20*time.Second, "the daemon to leave its group", func() bool {
		for _, pid := range marked(marker) {
			if st, err := proc.ReadStat(pid); err == nil && st.PGID != c.PGID && st.PGID == st.PID {
				return true
			}
		}
		return false
	})
	done := make(chan int, 1)
	go func() { done <- len(o.Members(c.Group)) }()
	testkit.Eventually(t, 20*time.Second, "Members to find the escapee", found)
	// A supervisor that does not read is called stopped after a second at
	// the soonest; until then no answer came, and none can.
	select {
	case n := <-done:
		t.Fatalf("Members returned %d members while the supervisor, stopped, had not answered the escapee's registration", n)
	case <-time.After(500 * time.Millisecond):
	}
	if err := syscall.Kill(sup, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	n := testkit.Receive(t, hangBound, done, "Members did not return after the supervisor was continued")
	if n != 2 {
		t.Errorf("Members after the supervisor answered: %d members, want 2 (the leader and its escapee)", n)
	}
}

// TestEscapeeLeavingAsTheGroupEmpties: in pgroup mode, a daemon that
// leaves its group (setsid) after the scan that precedes the drop of a
// group whose leader exited, and before the look that finds the group
// empty, is still found: its spawn stays registered, Members lists it,
// and it dies when the owner closes.
func TestEscapeeLeavingAsTheGroupEmpties(t *testing.T) {
	marker := newMarker(t, "late-setsid")
	gate := t.TempDir() + "/go"
	var pgid atomic.Int64
	var once sync.Once
	left := make(chan bool, 1)
	hooks := &ownerHooks{tidyScanned: func() {
		once.Do(func() {
			// The leader exited and the scan is done: the daemon leaves now.
			os.WriteFile(gate, nil, 0o600)
			deadline := time.Now().Add(20 * time.Second)
			for time.Now().Before(deadline) {
				for _, pid := range marked(marker) {
					if st, err := proc.ReadStat(pid); err == nil && int64(st.PGID) != pgid.Load() {
						left <- true
						return
					}
				}
				time.Sleep(time.Millisecond)
			}
			left <- false
		})
	}}
	o, err := newOwner(Options{Mode: ModePGroup, Grace: testGrace}, launchShell, hooks)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	script := fmt.Sprintf("(while [ ! -e %q ]; do sleep 0.01; done; exec setsid sleep 1000) & exit 0", gate)
	c, err := o.SpawnOwned(t.Context(), Spec{Unit: "d", Argv: []string{"sh", "-c", script},
		Env: append(os.Environ(), envRow+"="+marker)})
	if err != nil {
		t.Fatal(err)
	}
	pgid.Store(int64(c.PGID))
	ok := testkit.Receive(t, hangBound, left, "the group was never looked at for a drop")
	if !ok {
		t.Fatal("the daemon did not leave its group within 20s")
	}
	var daemon int
	testkit.Eventually(t, 20*time.Second, "the daemon listed among the spawn's members", func() bool {
		ms := o.Members(c.Group)
		if len(ms) == 1 {
			daemon = ms[0].PID
		}
		return daemon != 0
	})
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, "the daemon to die with its owner", func() bool {
		st, err := proc.ReadStat(daemon)
		return err != nil || st.Zombie()
	})
}

// TestEmptyFindsTheEscapee: in pgroup mode, a spawn whose leader exited
// and whose last process then left the group (setsid) is not empty: Empty
// looks for escapees before it says so, as Members does. Without that
// look, a simple unit that daemonized this way was called gone, and its
// stop killed the daemon it had just started.
func TestEmptyFindsTheEscapee(t *testing.T) {
	marker := newMarker(t, "empty-setsid")
	o := newTestOwner(t, Options{Mode: ModePGroup, Grace: testGrace})
	t.Cleanup(func() { o.Close() })
	c, release := gatedSetsid(t, o, marker, "exit 0")
	testkit.Receive(t, hangBound, c.Done(), "the leader did not exit")
	if n := len(o.Members(c.Group)); n != 1 {
		t.Fatalf("after the leader's exit: %d members, want 1 (the child waiting at the gate)", n)
	}
	daemon := release() // the child leaves the group now
	if o.Empty(c.Group) {
		t.Fatalf("Empty says the group is empty while its daemon %d, which left it, runs", daemon)
	}
	if err := o.Stop(t.Context(), c.Group, syscall.SIGTERM, testGrace); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(daemon, 0); err == nil {
		if st, err := proc.ReadStat(daemon); err == nil && !st.Zombie() {
			t.Errorf("the daemon %d outlived its group's stop", daemon)
		}
	}
}

// TestMembersAtOnceShareAScan: Members called by many at once (a hermesd
// looking for the main processes of forking units started together) runs
// one scan for those that came together, not one each: scans that ran at
// once from the same view each registered a new escapee again (a
// registration per scan under the spawn, and a line to the supervisor
// each), and cost a full read of the process table each, which on a
// loaded machine delayed finding the main processes past a unit's start.
// Each caller still lists the escapee that left before it called.
func TestMembersAtOnceShareAScan(t *testing.T) {
	marker := newMarker(t, "members-at-once")
	o := newTestOwner(t, Options{Mode: ModePGroup, Grace: testGrace})
	t.Cleanup(func() { o.Close() })
	c, release := gatedSetsid(t, o, marker, "exec sleep 1000")
	// A scan now (the next periodic one is a second away); then the
	// child leaves the group.
	o.Members(c.Group)
	daemon := release()
	const callers = 16
	var wg sync.WaitGroup
	listed := make([]bool, callers)
	for i := range callers {
		wg.Go(func() {
			listed[i] = slices.ContainsFunc(o.Members(c.Group), func(id proc.Identity) bool { return id.PID == daemon })
		})
	}
	wg.Wait()
	for i, ok := range listed {
		if !ok {
			t.Errorf("caller %d: Members did not list the daemon %d, which left the group before the call", i, daemon)
		}
	}
	o.mu.Lock()
	r := o.findLocked(c.Group)
	n := len(r.esc)
	o.mu.Unlock()
	if n != 1 {
		t.Errorf("the daemon's group is registered %d times under its spawn, want once", n)
	}
}

// gatedSetsid spawns, in pgroup owner o, a unit whose leader starts a
// child and then runs leaderTail ("exit 0", "exec sleep 1000"). The
// child waits at a gate; the returned release opens it, and the child
// leaves the group (setsid, in place) before it writes its pid, which
// release waits for and returns.
func gatedSetsid(t *testing.T, o *Owner, marker, leaderTail string) (c *Child, release func() int) {
	t.Helper()
	dir := t.TempDir()
	gate, pidf := dir+"/gate", dir+"/d.pid"
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	script := `( read -r _ < "$GATE"; exec setsid sh -c 'echo $$ > "$PIDF"; exec sleep 1000' ) & ` + leaderTail
	c, err := o.SpawnOwned(t.Context(), Spec{Unit: "d", Argv: []string{"sh", "-c", script},
		Env: append(os.Environ(), envRow+"="+marker, "GATE="+gate, "PIDF="+pidf)})
	if err != nil {
		t.Fatal(err)
	}
	return c, func() int {
		t.Helper()
		if err := os.WriteFile(gate, []byte("go\n"), 0); err != nil {
			t.Fatal(err)
		}
		var daemon int
		testkit.Eventually(t, 20*time.Second, "the daemon's pid file", func() bool {
			b, _ := os.ReadFile(pidf)
			daemon, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			return daemon > 1
		})
		return daemon
	}
}
