package reconciler

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
)

// sentRec is a signal the fake spawner was asked to send: to a unit's
// group (pid 0) or to one process.
type sentRec struct {
	unit string
	pid  int
	sig  syscall.Signal
}

var _ Signals = (*fakeSpawner)(nil)

// Signal records sig to g; TERM and KILL end g's process, as they would a
// program that does not catch them.
func (f *fakeSpawner) Signal(g supervisor.Group, sig syscall.Signal) error {
	f.mu.Lock()
	f.sent = append(f.sent, sentRec{g.Unit, 0, sig})
	f.mu.Unlock()
	if sig == syscall.SIGTERM || sig == syscall.SIGKILL {
		f.stopQuietly(g)
	}
	return nil
}

// SignalProcess records sig to id; it signals nothing.
func (f *fakeSpawner) SignalProcess(id proc.Identity, sig syscall.Signal) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	unit := ""
	for _, s := range f.spawns {
		if s.proc.g.Leader == id {
			unit = s.spec.Unit
		}
	}
	f.sent = append(f.sent, sentRec{unit, id.PID, sig})
	return nil
}

func (f *fakeSpawner) sentSignals() []sentRec {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sent)
}

// TestKillIsNoStop: a kill is a signal, not a stop. A unit killed by it
// has exited, and its restart policy restarts it (on-failure), where a
// stop would have kept it stopped.
func TestKillIsNoStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, units.RoleGateway, spec("svc", func(s *units.Spec) { s.Restart = units.RestartOnFailure }))
		synctest.Wait()
		if err := h.r.Kill(t.Context(), "svc", syscall.SIGTERM, control.WhomAll); err != nil {
			t.Fatal(err)
		}
		if got, want := h.fs.sentSignals(), []sentRec{{"svc", 0, syscall.SIGTERM}}; !slices.Equal(got, want) {
			t.Errorf("got signals %v, want %v", got, want)
		}
		synctest.Wait()
		if u := h.unit("svc"); u.State != control.StateFailed || u.Restarts != 1 || u.Stopped {
			t.Errorf("after the kill: state %s restarts %d stopped %v, want failed (backing off) with 1 restart, not stopped", u.State, u.Restarts, u.Stopped)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n := len(h.fs.spawnTimes("svc")); n != 2 {
			t.Errorf("spawned %d times after the kill and the backoff, want 2", n)
		}
		if u := h.unit("svc"); u.State != control.StateRunning {
			t.Errorf("state %s after the restart, want running", u.State)
		}
	})
}

// TestKillMain: --whom main signals the leader alone (a simple unit's
// main process), by its identity.
func TestKillMain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, units.RoleGateway, spec("svc"))
		synctest.Wait()
		leader := h.fs.last(t, "svc").g.Leader
		if err := h.r.Kill(t.Context(), "svc", syscall.SIGUSR1, control.WhomMain); err != nil {
			t.Fatal(err)
		}
		if got, want := h.fs.sentSignals(), []sentRec{{"svc", leader.PID, syscall.SIGUSR1}}; !slices.Equal(got, want) {
			t.Errorf("got signals %v, want %v", got, want)
		}
		if u := h.unit("svc"); u.State != control.StateRunning {
			t.Errorf("state %s, want running", u.State)
		}
	})
}

// TestKillRefused: an unknown unit, and a unit that is not running, are
// refused with what to do; nothing is sent.
func TestKillRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, units.RoleGateway, spec("svc"), spec("once", func(s *units.Spec) { s.Type = units.Oneshot }))
		synctest.Wait()
		h.fs.last(t, "once").exit(nil)
		synctest.Wait()
		if err := h.r.Kill(t.Context(), "nope", syscall.SIGHUP, control.WhomAll); !errors.Is(err, control.ErrUnknownUnit) {
			t.Errorf("kill of an unknown unit: got %v, want ErrUnknownUnit", err)
		}
		if err := h.r.Kill(t.Context(), "once", syscall.SIGHUP, control.WhomAll); !errors.Is(err, control.ErrConflict) {
			t.Errorf("kill of a done oneshot: got %v, want ErrConflict", err)
		}
		if err := h.r.Stop(t.Context(), "svc"); err != nil {
			t.Fatal(err)
		}
		if err := h.r.Kill(t.Context(), "svc", syscall.SIGHUP, control.WhomMain); !errors.Is(err, control.ErrConflict) {
			t.Errorf("kill of a stopped unit: got %v, want ErrConflict", err)
		}
		if got := h.fs.sentSignals(); len(got) != 0 {
			t.Errorf("got signals %v, want none", got)
		}
	})
}

// TestReloadUnit: reload_signal: goes to the main process and the unit
// runs on; reload: runs the command beside the unit, with MAINPID set,
// and the reload's outcome is the command's exit; a unit with neither
// key is refused, saying which keys to add.
func TestReloadUnit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, units.RoleGateway,
			spec("sig", func(s *units.Spec) { s.ReloadSignal = units.Signal(syscall.SIGHUP) }),
			spec("cmd", func(s *units.Spec) { s.Reload = []string{"/bin/reload-it", "now"} }),
			spec("none"))
		synctest.Wait()
		leader := h.fs.last(t, "sig").g.Leader
		if err := h.r.ReloadUnit(t.Context(), "sig"); err != nil {
			t.Fatal(err)
		}
		if got, want := h.fs.sentSignals(), []sentRec{{"sig", leader.PID, syscall.SIGHUP}}; !slices.Equal(got, want) {
			t.Errorf("got signals %v, want %v", got, want)
		}
		if u := h.unit("sig"); u.State != control.StateRunning || len(h.fs.spawnTimes("sig")) != 1 {
			t.Errorf("after its reload: state %s, %d spawns; want running, still 1", u.State, len(h.fs.spawnTimes("sig")))
		}

		main := h.fs.last(t, "cmd")
		for _, exit := range []error{nil, errExit1} {
			done := make(chan error, 1)
			go func() { done <- h.r.ReloadUnit(context.Background(), "cmd") }()
			synctest.Wait()
			h.fs.mu.Lock()
			rs := h.fs.spawns[len(h.fs.spawns)-1]
			h.fs.mu.Unlock()
			if !slices.Equal(rs.spec.Argv, []string{"/bin/reload-it", "now"}) || !slices.Contains(rs.spec.Env, "MAINPID="+strconv.Itoa(main.g.Leader.PID)) {
				t.Fatalf("reload spawned %q with env %q; want the reload: command with MAINPID=%d", rs.spec.Argv, rs.spec.Env, main.g.Leader.PID)
			}
			rs.proc.exit(exit)
			if err := <-done; !errors.Is(err, exit) || (exit == nil) != (err == nil) {
				t.Errorf("reload whose command exits with %v: got %v", exit, err)
			}
		}
		if u := h.unit("cmd"); u.State != control.StateRunning || u.PID != main.g.Leader.PID {
			t.Errorf("after its reloads: state %s pid %d, want running with pid %d", u.State, u.PID, main.g.Leader.PID)
		}

		err := h.r.ReloadUnit(t.Context(), "none")
		if !errors.Is(err, control.ErrConflict) || !strings.Contains(err.Error(), "reload_signal:") {
			t.Errorf("reload of a unit without a reload key: got %v, want ErrConflict naming reload_signal:", err)
		}
	})
}
