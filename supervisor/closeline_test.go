package supervisor

import (
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
)

// sendAll sends lines to p and waits for their answers: it fails the test
// on a refusal, or when no answer comes within 10 s.
func sendAll(t *testing.T, p deathPipe, lines ...string) {
	t.Helper()
	ack := make(chan error, len(lines))
	bs := make([][]byte, len(lines))
	for i, l := range lines {
		bs[i] = []byte(l + "\n")
	}
	p.Send(bs, func(_ int, err error) { ack <- err })
	for _, l := range lines {
		if err := testkit.Receive(t, 10*time.Second, ack, "no answer to %q within 10 s", l); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
	}
}

// alive reports whether cmd's process has not exited (its leader is the
// test's child: a zombie until reaped counts as exited).
func alive(cmd *exec.Cmd) bool {
	st, err := proc.ReadStat(cmd.Process.Pid)
	return err == nil && !st.Zombie()
}

// TestScriptUnregistersAll: "U *" unregisters every group registered
// before it, and only those: at EOF a group registered after it is
// ended, those registered before are not.
func TestScriptUnregistersAll(t *testing.T) {
	for _, table := range []string{"proc", "ps"} {
		t.Run(table, func(t *testing.T) {
			before1, id1 := sleeper(t)
			before2, id2 := sleeper(t)
			after, id3 := sleeper(t)
			ended := reaper(after)
			p, err := startShell(300*time.Millisecond, syscall.Getpgrp(), "", "", table)
			if err != nil {
				t.Fatal(err)
			}
			reg := func(id string, g proc.Identity) string {
				return fmt.Sprintf("R %s %d %d %d - -", id, g.PID, g.PID, g.StartTime)
			}
			sendAll(t, p, reg("b1", id1), reg("b2", id2), "U *", reg("a1", id3))
			p.Close()
			testkit.Receive(t, 10*time.Second, p.Exited(), "supervisor did not exit after EOF")
			if !ended() {
				t.Error("the group registered after U * survived EOF")
			}
			for _, c := range []*exec.Cmd{before1, before2} {
				if !alive(c) {
					t.Errorf("group %d, registered before U *, was ended at EOF", c.Process.Pid)
				}
			}
		})
	}
}

// TestScriptCloseLine: C, the owner's word that it closes, does what EOF
// does without waiting for EOF: with nothing registered the supervisor
// exits at once (status 0, nothing signalled); with a group registered it
// ends it, then exits. The owner's write end stays open throughout.
func TestScriptCloseLine(t *testing.T) {
	for _, table := range []string{"proc", "ps"} {
		t.Run(table, func(t *testing.T) {
			t.Run("nothing registered", func(t *testing.T) {
				spared, id := sleeper(t)
				p, err := startShell(300*time.Millisecond, syscall.Getpgrp(), "", "", table)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(p.Close)
				sendAll(t, p, fmt.Sprintf("R s1 %d %d %d - -", id.PID, id.PID, id.StartTime), "U s1", "C")
				testkit.Receive(t, 10*time.Second, p.Exited(), "supervisor did not exit within 10 s of C, its pipe still open")
				if sp := p.(*shellPipe); !sp.status.Exited() || sp.status.ExitStatus() != 0 {
					t.Errorf("supervisor ended with %v, want exit status 0", sp.status)
				}
				if !alive(spared) {
					t.Error("the unregistered group was ended")
				}
			})
			t.Run("a group registered", func(t *testing.T) {
				kill, id := sleeper(t)
				ended := reaper(kill)
				p, err := startShell(300*time.Millisecond, syscall.Getpgrp(), "", "", table)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(p.Close)
				sendAll(t, p, fmt.Sprintf("R s1 %d %d %d - -", id.PID, id.PID, id.StartTime), "C")
				testkit.Receive(t, 10*time.Second, p.Exited(), "supervisor did not exit within 10 s of C, its pipe still open")
				if !ended() {
					t.Error("the group registered at C survived it")
				}
			})
		})
	}
}

// heldPipe is a supervisor whose write end the owner cannot close: Close
// is the test's (see TestCloseEndsSupervisorWithoutEOF).
type heldPipe struct{ deathPipe }

func (heldPipe) Close() {}

// TestCloseEndsSupervisorWithoutEOF: Close tells the supervisor that the
// owner closes (C) before it closes the death pipe, and the supervisor
// acts on it without waiting for EOF: with nothing registered (the clean
// stop's usual Close) it exits at once, and with a group still registered
// it ends the group, then exits. The write end here outlives Close, so a
// supervisor that waited for EOF would keep Close waiting out its bound
// (the grace plus 5 s), which Close reports as an error.
func TestCloseEndsSupervisorWithoutEOF(t *testing.T) {
	for _, mode := range modes(t) {
		t.Run(string(mode), func(t *testing.T) {
			for _, registered := range []bool{false, true} {
				t.Run(fmt.Sprintf("registered=%v", registered), func(t *testing.T) {
					var mu sync.Mutex
					var pipes []deathPipe
					t.Cleanup(func() {
						mu.Lock()
						defer mu.Unlock()
						for _, p := range pipes {
							p.Close()
						}
					})
					launch := func(grace time.Duration, pgid int, base, own, table string, replay [][]byte, reply func(int, error)) (deathPipe, error) {
						p, err := launchShell(grace, pgid, base, own, table, replay, reply)
						if err != nil {
							return nil, err
						}
						mu.Lock()
						pipes = append(pipes, p)
						mu.Unlock()
						return heldPipe{p}, nil
					}
					o, err := newOwner(Options{Mode: mode, Grace: 200 * time.Millisecond}, launch, nil)
					if err != nil {
						t.Fatal(err)
					}
					g, cmd := sleepGroup(t, "g")
					if err := o.Own(t.Context(), g); err != nil {
						t.Fatal(err)
					}
					if !registered {
						if err := o.Release(t.Context(), g); err != nil {
							t.Fatal(err)
						}
					}
					closeWithin(t, o, time.Minute)
					mu.Lock()
					p := pipes[len(pipes)-1]
					mu.Unlock()
					select {
					case <-p.Exited():
					default:
						t.Error("Close returned before the supervisor exited")
					}
					if registered && !testkit.Within(10*time.Second, func() bool { return groupEmpty(g) }) {
						t.Errorf("group %d, registered at Close, was not ended", g.PGID)
					}
					if !registered && !alive(cmd) {
						t.Errorf("group %d, released before Close, was ended", g.PGID)
					}
				})
			}
		})
	}
}

// TestDropLeavesOthersRegistered: a StopAll that stops some of the
// owner's groups unregisters those alone ("U *" only once none is left):
// the others still die with the owner. The owner's death is played by
// closing its death pipe.
func TestDropLeavesOthersRegistered(t *testing.T) {
	o := newTestOwner(t, Options{Mode: ModePGroup, Grace: 200 * time.Millisecond})
	t.Cleanup(func() { o.Close() })
	_, sid := sleeper(t)
	keptCmd, kid := sleeper(t)
	keptEnded := reaper(keptCmd)
	stopped := Group{Unit: "stopped", PGID: sid.PID, Leader: sid}
	kept := Group{Unit: "kept", PGID: kid.PID, Leader: kid}
	if err := o.Own(t.Context(), stopped, kept); err != nil {
		t.Fatal(err)
	}
	if err := o.StopAll(t.Context(), []StopOrder{{Group: stopped, Signal: syscall.SIGTERM, Grace: time.Minute}}, nil, func(int, error) {}); err != nil {
		t.Fatal(err)
	}
	if n := o.Status().Groups; n != 1 {
		t.Fatalf("%d groups registered after the stop of one of two, want 1", n)
	}
	o.mu.Lock()
	p := o.pipe
	o.mu.Unlock()
	p.Close()
	testkit.Receive(t, 10*time.Second, p.Exited(), "supervisor did not exit within 10 s of EOF")
	if !keptEnded() {
		t.Error("the group left registered survived the owner's death")
	}
}
