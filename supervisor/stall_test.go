package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
)

// hangBound is how long a call may take before the test calls it a hang.
// It is no speed assertion: a call that fails for the right reason passes
// however long it took within it.
const hangBound = 30 * time.Second

// within runs f and fails the test if it has not returned within
// hangBound (a wedged owner): f's result is returned.
func within[T any](t *testing.T, what string, f func(ctx context.Context) T) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), hangBound)
	defer cancel()
	done := make(chan T, 1)
	go func() { done <- f(ctx) }()
	select {
	case v := <-done:
		return v
	case <-time.After(hangBound + 5*time.Second):
		t.Fatalf("%s did not return within %v: the owner is wedged", what, hangBound)
		panic("unreachable")
	}
}

// TestSupervisorStopped: with its supervisor stopped (SIGSTOP), an owner
// still answers: SpawnOwned, Own and Release return an error that names
// the stopped supervisor, the program of the refused spawn never runs,
// Status says the supervisor is stopped, and more unit restarts than its
// pipe can buffer change nothing. After SIGCONT the owner recovers: health
// ok, spawns work, and its groups still die with it.
func TestSupervisorStopped(t *testing.T) {
	for _, mode := range modes(t) {
		// Not parallel: owners of one process share its identity, and a
		// pgroup owner (a subreaper) would take the other's children for
		// its escapees.
		t.Run(string(mode), func(t *testing.T) {
			marker := newMarker(t, "stopped-"+string(mode))
			o := newTestOwner(t, Options{Mode: mode, Grace: testGrace, StateDir: t.TempDir(), Logf: t.Logf})
			t.Cleanup(func() { o.Close() })
			before := spawnReady(t, o, marker, "simple")
			sup := o.Status().PID
			if sup == 0 {
				t.Fatal("no supervisor runs with a group registered")
			}
			ext := externalGroup(t)
			if err := o.Own(t.Context(), ext); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Kill(sup, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { syscall.Kill(sup, syscall.SIGCONT) })
			if !testkit.Within(10*time.Second, func() bool { return strings.HasPrefix(o.Status().Health, "stopped") }) {
				t.Errorf("health with the supervisor stopped: got %q, want stopped…", o.Status().Health)
			}
			names := func(t *testing.T, what string, err error) {
				t.Helper()
				if !errors.Is(err, ErrSupervisor) || !strings.Contains(err.Error(), "supervisor "+strconv.Itoa(sup)+" is stopped") {
					t.Errorf("%s with the supervisor stopped: got %v, want ErrSupervisor naming supervisor %d as stopped", what, err, sup)
				}
			}
			// More restarts than a 64 KiB pipe holds in lines, as a unit
			// in a restart loop makes (a spawn that succeeds ends the
			// loop: it should not have), then Own and Release.
			ranMarker := marker + "-ran"
			t.Cleanup(func() { killMarked(ranMarker) })
			for i := range 400 {
				err := within(t, "SpawnOwned", func(ctx context.Context) error {
					_, err := o.SpawnOwned(ctx, Spec{Unit: "s" + strconv.Itoa(i), Argv: []string{os.Args[0]},
						Env: append(os.Environ(), envHelper+"=child", envKind+"=simple", envRow+"="+ranMarker)})
					return err
				})
				names(t, "SpawnOwned", err)
				if err == nil {
					break
				}
				// The message docs/bad-input.md shows.
				want := fmt.Sprintf("spawn s0: death supervisor unavailable: stopped: supervisor %d is stopped; registrations fail until it runs again (kill -CONT %d)", sup, sup)
				if i == 0 && err.Error() != want {
					t.Errorf("SpawnOwned with the supervisor stopped: got %q, want %q", err, want)
				}
			}
			// Own and Release, again and again: more lines than the pipe
			// holds, were they written; each call must fail at once and
			// none may block the owner.
			other := externalGroup(t)
			for i := range 2000 {
				err := within(t, "Own", func(ctx context.Context) error { return o.Own(ctx, other) })
				if err != nil {
					names(t, "Own", err)
					break
				}
				if i == 0 {
					t.Errorf("Own with the supervisor stopped: got no error")
				}
				within(t, "Release", func(ctx context.Context) error { return o.Release(ctx, other) })
			}
			names(t, "Release", within(t, "Release", func(ctx context.Context) error { return o.Release(ctx, ext) }))
			if st := within(t, "Status", func(context.Context) Status { return o.Status() }); !strings.Contains(st.Health, strconv.Itoa(sup)) {
				t.Errorf("status after the refused calls: got %+v, want the stopped supervisor %d named", st, sup)
			}
			if got := len(marked(ranMarker)); got != 0 {
				t.Errorf("programs of refused spawns running: got %d, want 0", got)
			}

			if err := syscall.Kill(sup, syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			if !testkit.Within(10*time.Second, func() bool { return o.Status().Health == "ok" }) {
				t.Errorf("health after SIGCONT: got %q, want ok", o.Status().Health)
			}
			if err := o.Release(t.Context(), ext); err != nil {
				t.Errorf("Release after SIGCONT: %v", err)
			}
			after := spawnReady(t, o, marker, "simple")
			if got := o.Status().PID; got != sup {
				t.Errorf("supervisor after SIGCONT: got %d, want the same %d", got, sup)
			}
			if err := o.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			for _, c := range []*Child{before, after} {
				select {
				case <-c.Done():
				case <-time.After(hangBound):
					t.Errorf("owned child %d alive after Close", c.Leader.PID)
				}
			}
			if !ext.Leader.Alive() {
				t.Error("the group released after SIGCONT was killed at Close")
			}
		})
	}
}

// TestRegistrationRefused: a registration the supervisor refuses fails the
// spawn (or Own) with the supervisor's reason, and the program never runs.
// The refusals are provoked by starting the real script with another
// cgroup base (every cgroup dir is then outside it) or another owner group
// than the owner's (a group the owner may own is then unsafe to the
// script).
func TestRegistrationRefused(t *testing.T) {
	t.Run("cgroup outside the base", func(t *testing.T) {
		if ok, why := cgroupAvailable(); !ok {
			t.Skipf("needs cgroup mode: %s", why)
		}
		marker := newMarker(t, "refused-cg")
		elsewhere := t.TempDir()
		bogus := func(grace time.Duration, pgid int, _, own, table string, replay [][]byte, reply func(int, error)) (deathPipe, error) {
			return launchShell(grace, pgid, elsewhere, own, table, replay, reply)
		}
		o, err := newOwner(Options{Mode: ModeCgroup, Grace: testGrace}, bogus, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		_, err = o.SpawnOwned(t.Context(), Spec{Unit: "refused", Argv: []string{os.Args[0]},
			Env: append(os.Environ(), envHelper+"=child", envKind+"=simple", envRow+"="+marker)})
		var re *RefusedError
		if !errors.As(err, &re) || !strings.Contains(re.Reason, "below the base") {
			t.Errorf("spawn into a cgroup the supervisor refuses: got %v, want a RefusedError with its reason", err)
		} else if want := fmt.Sprintf("spawn refused: supervisor %d refused registration %s: cgroup is not a directory below the base", re.PID, re.ID); err.Error() != want {
			t.Errorf("spawn into a cgroup the supervisor refuses: got %q, want %q (docs/bad-input.md)", err, want)
		}
		if got := marked(marker); len(got) != 0 {
			t.Errorf("the refused spawn's program runs: %v", got)
		}
		if st := o.Status(); st.Groups != 0 {
			t.Errorf("groups registered after the refusal: got %d, want 0", st.Groups)
		}
	})
	t.Run("unsafe group", func(t *testing.T) {
		victim := externalGroup(t)
		unsafe := func(grace time.Duration, _ int, base, own, table string, replay [][]byte, reply func(int, error)) (deathPipe, error) {
			return launchShell(grace, victim.PGID, base, own, table, replay, reply)
		}
		o, err := newOwner(Options{Mode: ModePGroup, Grace: testGrace}, unsafe, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = o.Own(t.Context(), victim)
		var re *RefusedError
		if !errors.As(err, &re) || !strings.Contains(re.Reason, "unsafe group") {
			t.Errorf("Own of a group the supervisor refuses: got %v, want a RefusedError with its reason", err)
		}
		if st := o.Status(); st.Groups != 0 {
			t.Errorf("groups registered after the refusal: got %d, want 0", st.Groups)
		}
		if err := o.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if !victim.Leader.Alive() {
			t.Error("the refused group was killed at Close")
		}
	})
}

// TestCloseWithSupervisorStopped: Close of an owner whose supervisor is
// stopped does not wait for it forever: after its bound it stops the
// groups itself, kills the supervisor (which must not wake up later and
// act on a pipe long closed), and says so.
func TestCloseWithSupervisorStopped(t *testing.T) {
	for _, mode := range modes(t) {
		t.Run(string(mode), func(t *testing.T) {
			marker := newMarker(t, "stopped-close-"+string(mode))
			o := newTestOwner(t, Options{Mode: mode, Grace: testGrace})
			c := spawnReady(t, o, marker, "simple")
			sup := o.Status().PID
			if err := syscall.Kill(sup, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { syscall.Kill(sup, syscall.SIGCONT) })
			err := within(t, "Close", func(context.Context) error { return o.Close() })
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("supervisor %d did not exit", sup)) {
				t.Errorf("Close with the supervisor stopped: got %v, want an error naming supervisor %d", err, sup)
			}
			select {
			case <-c.Done():
			case <-time.After(hangBound):
				t.Errorf("owned child %d alive after Close", c.Leader.PID)
			}
			if !testkit.Within(hangBound, func() bool { return syscall.Kill(sup, 0) != nil }) {
				t.Errorf("supervisor %d still exists after Close", sup)
			}
		})
	}
}
