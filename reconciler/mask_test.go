package reconciler

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/holds"
	"github.com/hermes-units/hermes/units"
)

func withRequires(d ...string) func(*units.Spec) {
	return func(s *units.Spec) { s.Requires, s.After = d, d }
}

// wantMasked checks name's row: its state and its masked mark.
func wantMasked(t *testing.T, r *Reconciler, name string, state control.UnitState, masked bool) {
	t.Helper()
	u := unitRow(t, r, name)
	if u.State != state || u.Masked != masked || u.Stopped {
		t.Errorf("%s: state %q masked %v stopped %v, want %q, %v, false", name, u.State, u.Masked, u.Stopped, state, masked)
	}
}

// wantRefused checks that err refuses a start because of the masked unit
// masked, and says how to undo it.
func wantRefused(t *testing.T, what string, err error, masked string) {
	t.Helper()
	if !errors.Is(err, control.ErrConflict) || !strings.Contains(err.Error(), "masked") || !strings.Contains(err.Error(), "hermesctl unmask "+masked) {
		t.Errorf("%s: got %v, want a conflict saying %s is masked and `hermesctl unmask %s` undoes it", what, err, masked, masked)
	}
}

// TestMaskRefusesStarts: mask alone leaves a running unit running; mask
// --now stops it. Then nothing starts it: Start, Restart, Enable (with or
// without start) are refused, and so are Start and Restart of a unit that
// requires it; an edit of its file, a restart of hermesd and a reboot
// leave it stopped and masked. Unmask leaves it stopped until Start.
func TestMaskRefusesStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp, fs, d := runHeld(t, spec("a", withArgv("1")), spec("b", withRequires("a")))
		if err := d.r.Mask(t.Context(), "a", false); err != nil {
			t.Fatal(err)
		}
		wantMasked(t, d.r, "a", "running", true)
		if err := d.r.Mask(t.Context(), "a", true); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		wantMasked(t, d.r, "a", "stopped", true)
		for _, op := range []struct {
			name string
			do   func(context.Context, string) error
		}{
			{"start", d.r.Start}, {"restart", d.r.Restart},
			{"enable", func(ctx context.Context, n string) error { return d.r.Enable(ctx, n, true) }},
			{"enable --no-start", func(ctx context.Context, n string) error { return d.r.Enable(ctx, n, false) }},
		} {
			wantRefused(t, op.name+" a", op.do(t.Context(), "a"), "a")
		}
		wantRefused(t, "start b (requires a)", d.r.Start(t.Context(), "b"), "a")
		wantRefused(t, "restart b (requires a)", d.r.Restart(t.Context(), "b"), "a")
		fs.set(spec("a", withArgv("2")))
		reloadNow(t, d.r)
		wantSpawns(t, sp, "a", 1, "masked, after an edit of its file")
		for _, boot := range []string{boot1, boot2} { // a restart of hermesd, then a reboot
			d = d.restart(boot)
			wantSpawns(t, sp, "a", 1, "masked, after hermesd started again")
			wantMasked(t, d.r, "a", "stopped", true)
			wantRefused(t, "start a after hermesd started again", d.r.Start(t.Context(), "a"), "a")
		}
		wantSpawns(t, sp, "b", 1, "while the unit it requires is masked")

		if err := d.r.Unmask(t.Context(), "a"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		wantSpawns(t, sp, "a", 1, "at unmask")
		if u := unitRow(t, d.r, "a"); u.State != "stopped" || u.Masked || !u.Stopped {
			t.Errorf("a after unmask: state %q masked %v stopped %v, want stopped by command, not masked", u.State, u.Masked, u.Stopped)
		}
		if h, err := holds.Open(d.dir, boot2).Load(); err != nil || len(h.Masked) != 0 {
			t.Errorf("holds file after unmask: %+v, %v; want no masked unit", h, err)
		}
		if err := d.r.Start(t.Context(), "a"); err != nil {
			t.Fatal(err)
		}
		wantMasked(t, d.r, "a", "running", false)
	})
}

// TestMaskedJobDoesNotFire: a masked job does not fire on its schedule;
// unmasked, it fires at the next time.
func TestMaskedJobDoesNotFire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp, _, d := runHeld(t, jobSpec("job", "* * * * *"))
		if err := d.r.Mask(t.Context(), "job", false); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3*time.Minute + 30*time.Second) // between minute boundaries
		wantSpawns(t, sp, "job", 0, "in three minutes masked")
		if err := d.r.Unmask(t.Context(), "job"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		wantSpawns(t, sp, "job", 1, "a minute after unmask")
	})
}

// TestMaskRefusals: an unknown unit cannot be masked or unmasked.
func TestMaskRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, _, d := runHeld(t, spec("a"))
		if err := d.r.Mask(t.Context(), "nope", false); !errors.Is(err, control.ErrUnknownUnit) {
			t.Errorf("mask of an unknown unit: %v, want ErrUnknownUnit", err)
		}
		if err := d.r.Unmask(t.Context(), "nope"); !errors.Is(err, control.ErrUnknownUnit) {
			t.Errorf("unmask of an unknown unit: %v, want ErrUnknownUnit", err)
		}
		if err := d.r.Unmask(t.Context(), "a"); err != nil {
			t.Errorf("unmask of a unit not masked: %v, want nothing done", err)
		}
		wantMasked(t, d.r, "a", "running", false)
	})
}

// TestMaskedUnitNotRestarted: a unit masked while running runs on, and
// once it exits its restart policy does not start it again.
func TestMaskedUnitNotRestarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp := &fakeSpawner{fail: map[string]error{}}
		always := func(s *units.Spec) { s.Restart = units.RestartAlways }
		fs := &files{specs: map[string]units.Spec{"a": spec("a", always)}}
		d := runOn(t, sp, fs.load, t.TempDir(), boot1)
		if err := d.r.Mask(t.Context(), "a", false); err != nil {
			t.Fatal(err)
		}
		wantMasked(t, d.r, "a", "running", true)
		sp.last(t, "a").exit(errors.New("exit status 1"))
		time.Sleep(time.Minute) // many times its restart_sec
		synctest.Wait()
		wantSpawns(t, sp, "a", 1, "after it exited, masked")
		wantMasked(t, d.r, "a", "stopped", true)
	})
}
