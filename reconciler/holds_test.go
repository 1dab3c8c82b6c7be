package reconciler

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/holds"
	"github.com/hermes-units/hermes/units"
)

// The boots the tests run in: a restart of hermesd keeps the boot id, a
// reboot changes it.
const (
	boot1 = "11111111-1111-4111-8111-111111111111"
	boot2 = "22222222-2222-4222-8222-222222222222"
)

// daemonRun is one Reconciler run over a state directory, as one hermesd
// run: stop ends it cleanly (owned units stopped), as SIGTERM does.
type daemonRun struct {
	r    *Reconciler
	stop func() error
	// what restart runs again
	t    *testing.T
	sp   Spawner
	load func(context.Context) (Loaded, error)
	dir  string
}

// runOn runs a Reconciler over sp and fs whose holds are in dir for boot;
// call it inside a synctest bubble. It returns once the first pass is done.
func runOn(t *testing.T, sp Spawner, load func(context.Context) (Loaded, error), dir, boot string) *daemonRun {
	t.Helper()
	o := fakeOptions(t, sp, load)
	o.StateDir, o.Holds = dir, holds.Open(dir, boot)
	r := mustNew(t, o)
	d := &daemonRun{r: r, stop: runInTest(t, r), t: t, sp: sp, load: load, dir: dir}
	synctest.Wait()
	return d
}

// runHeld runs, in boot1, a Reconciler over a fake spawner and the units
// specs, with its holds in a fresh directory.
func runHeld(t *testing.T, specs ...units.Spec) (*fakeSpawner, *files, *daemonRun) {
	t.Helper()
	sp := &fakeSpawner{fail: map[string]error{}}
	fs := &files{specs: map[string]units.Spec{}}
	for _, s := range specs {
		fs.specs[s.Name] = s
	}
	return sp, fs, runOn(t, sp, fs.load, t.TempDir(), boot1)
}

// restart stops d cleanly and runs hermesd again, in boot, over the same
// spawner, units and holds.
func (d *daemonRun) restart(boot string) *daemonRun {
	d.t.Helper()
	d.stop()
	return runOn(d.t, d.sp, d.load, d.dir, boot)
}

// unitRow is the status row of name.
func unitRow(t *testing.T, r *Reconciler, name string) control.Unit {
	t.Helper()
	st, err := r.Status(t.Context(), name)
	if err != nil {
		t.Fatalf("status %s: %v", name, err)
	}
	return st.Units[0]
}

func wantRow(t *testing.T, r *Reconciler, name string, state control.UnitState, disabled, stopped bool) {
	t.Helper()
	u := unitRow(t, r, name)
	if u.State != state || u.Disabled != disabled || u.Stopped != stopped {
		t.Errorf("%s: state %q disabled %v stopped %v, want %q, %v, %v", name, u.State, u.Disabled, u.Stopped, state, disabled, stopped)
	}
}

func wantSpawns(t *testing.T, sp *fakeSpawner, name string, n int, when string) {
	t.Helper()
	if got := len(sp.spawnTimes(name)); got != n {
		t.Errorf("%s spawned %d times %s, want %d", name, got, when, n)
	}
}

// TestDisableKeepsStopped: a disabled unit stops, and is not started by an
// edit of its file, a removal and re-declaration, Start or Restart (both
// refused), a restart of hermesd or a reboot; Enable starts it, and it
// starts at the next hermesd start too.
func TestDisableKeepsStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp, fs, d := runHeld(t, spec("a", withArgv("1")), spec("b"))
		if err := d.r.Disable(t.Context(), "a"); err != nil {
			t.Fatal(err)
		}
		wantRow(t, d.r, "a", "disabled", true, false)
		for _, op := range []struct {
			name string
			do   func(context.Context, string) error
		}{{"start", d.r.Start}, {"restart", d.r.Restart}} {
			if err := op.do(t.Context(), "a"); !errors.Is(err, control.ErrConflict) || !strings.Contains(err.Error(), "hermesctl enable a") {
				t.Errorf("%s of a disabled unit: got %v, want a conflict that says to enable it", op.name, err)
			}
		}
		fs.set(spec("a", withArgv("2")))
		reloadNow(t, d.r)
		fs.del("a")
		reloadNow(t, d.r)
		fs.set(spec("a", withArgv("3")))
		reloadNow(t, d.r)
		wantSpawns(t, sp, "a", 1, "after an edit, a removal and a re-declaration")
		wantRow(t, d.r, "a", "disabled", true, false)

		for _, boot := range []string{boot1, boot2} { // a restart of hermesd, then a reboot
			d = d.restart(boot)
			wantSpawns(t, sp, "a", 1, "after hermesd started again")
			wantRow(t, d.r, "a", "disabled", true, false)
		}
		wantSpawns(t, sp, "b", 3, "(once per hermesd run)")

		if err := d.r.Enable(t.Context(), "a", true); err != nil {
			t.Fatal(err)
		}
		wantSpawns(t, sp, "a", 2, "after enable")
		wantRow(t, d.r, "a", "running", false, false)
		last := sp.lastArgv(t)
		if !slices.Equal(last, []string{"/bin/sleep", "3"}) {
			t.Errorf("enable ran %q, want the file's last version", last)
		}
		d.restart(boot2)
		wantSpawns(t, sp, "a", 3, "at the start of hermesd after enable")
	})
}

// TestEnableWithoutStart: enable --no-start leaves the unit stopped as by
// Stop, across a restart of hermesd; Start starts it. Enabling a unit that
// is not disabled changes nothing.
func TestEnableWithoutStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp, _, d := runHeld(t, spec("a"), spec("b"))
		if err := d.r.Enable(t.Context(), "b", false); err != nil {
			t.Fatal(err)
		}
		wantRow(t, d.r, "b", "running", false, false)
		if err := d.r.Disable(t.Context(), "a"); err != nil {
			t.Fatal(err)
		}
		if err := d.r.Enable(t.Context(), "a", false); err != nil {
			t.Fatal(err)
		}
		wantRow(t, d.r, "a", "stopped", false, true)
		d = d.restart(boot1)
		wantSpawns(t, sp, "a", 1, "after enable --no-start and a restart of hermesd")
		wantRow(t, d.r, "a", "stopped", false, true)
		if err := d.r.Start(t.Context(), "a"); err != nil {
			t.Fatal(err)
		}
		wantRow(t, d.r, "a", "running", false, false)
	})
}

// TestStopKeptWithinBoot: a stop by command survives a new Reconciler over
// the same state directory in the same boot (a restart of hermesd, clean
// or not: the file is written when the stop is made), and is forgotten in
// another boot. Start clears it for the next run too.
func TestStopKeptWithinBoot(t *testing.T) {
	for _, tc := range []struct {
		name       string
		boot       string
		wantSpawns int // of a once the new Reconciler ran its first pass
		wantState  control.UnitState
	}{
		{"same boot", boot1, 1, "stopped"},
		{"after a reboot", boot2, 2, "running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sp, _, d := runHeld(t, spec("a"), spec("b"))
				if err := d.r.Stop(t.Context(), "a"); err != nil {
					t.Fatal(err)
				}
				wantRow(t, d.r, "a", "stopped", false, true)
				// No clean stop first: what the next run reads is what
				// the stop wrote, as after a kill -9.
				h, err := holds.Open(d.dir, boot1).Load()
				if err != nil || !slices.Equal(h.Stopped, []string{"a"}) {
					t.Fatalf("holds file after the stop: %+v, %v; want a stopped", h, err)
				}
				d = d.restart(tc.boot)
				wantSpawns(t, sp, "a", tc.wantSpawns, "after a new Reconciler")
				wantRow(t, d.r, "a", tc.wantState, false, tc.wantState == "stopped")
				if tc.boot != boot1 {
					return
				}
				if err := d.r.Start(t.Context(), "a"); err != nil {
					t.Fatal(err)
				}
				d.restart(boot1)
				wantSpawns(t, sp, "a", 3, "after start and a restart of hermesd")
			})
		})
	}
}

// TestStopForgottenWithFile: the stop of a unit whose file is removed is
// forgotten (declared again, the unit is new and starts), also across a
// restart of hermesd; a unit whose file does not load at hermesd's start
// keeps its stop.
func TestStopForgottenWithFile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		sp := &fakeSpawner{fail: map[string]error{}}
		var mu sync.Mutex
		fs := &files{specs: map[string]units.Spec{"a": spec("a"), "b": spec("b")}}
		var errs []*units.Error
		load := func(ctx context.Context) (Loaded, error) {
			l, err := fs.load(ctx)
			mu.Lock()
			l.Errors = slices.Clone(errs)
			mu.Unlock()
			return l, err
		}
		d := runOn(t, sp, load, dir, boot1)
		for _, n := range []string{"a", "b"} {
			if err := d.r.Stop(t.Context(), n); err != nil {
				t.Fatal(err)
			}
		}
		fs.del("a")
		reloadNow(t, d.r)
		d.stop()
		// b's file is broken when hermesd starts again: b is not declared
		// then, but its stop waits for the file to load.
		fs.del("b")
		mu.Lock()
		errs = []*units.Error{{File: filepath.Join("units", "b.yaml"), Line: 1, Column: 1, Msg: "broken"}}
		mu.Unlock()
		fs.set(spec("a"))
		d = runOn(t, sp, load, dir, boot1)
		wantSpawns(t, sp, "a", 2, "once declared again after its removal")
		fs.set(spec("b"))
		mu.Lock()
		errs = nil
		mu.Unlock()
		reloadNow(t, d.r)
		wantSpawns(t, sp, "b", 1, "once its file loads again")
		wantRow(t, d.r, "b", "stopped", false, true)
	})
}

// TestDisabledJobDoesNotFire: a disabled job does not fire on its
// schedule; enabled, it is not run at once, and fires at the next time.
func TestDisabledJobDoesNotFire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp, _, d := runHeld(t, jobSpec("job", "* * * * *"))
		if err := d.r.Disable(t.Context(), "job"); err != nil {
			t.Fatal(err)
		}
		wantRow(t, d.r, "job", "disabled", true, false)
		time.Sleep(3*time.Minute + 30*time.Second) // between minute boundaries (the bubble starts on one)
		wantSpawns(t, sp, "job", 0, "in three minutes disabled")
		if err := d.r.Enable(t.Context(), "job", true); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		wantSpawns(t, sp, "job", 0, "at enable")
		wantRow(t, d.r, "job", "inactive", false, false)
		time.Sleep(time.Minute)
		wantSpawns(t, sp, "job", 1, "a minute after enable")
	})
}

// TestUntrustedHoldsFile: a holds file that does not parse is set aside
// and the units start; the next change writes a good file.
func TestUntrustedHoldsFile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, holds.FileName)
		if err := os.WriteFile(path, []byte(`{"version":1,"disabled":["a"`), 0o600); err != nil {
			t.Fatal(err)
		}
		sp := &fakeSpawner{fail: map[string]error{}}
		fs := &files{specs: map[string]units.Spec{"a": spec("a")}}
		d := runOn(t, sp, fs.load, dir, boot1)
		wantSpawns(t, sp, "a", 1, "with a truncated holds file")
		aside, _ := filepath.Glob(path + ".corrupt-*")
		if len(aside) != 1 {
			t.Fatalf("files set aside: %q, want one", aside)
		}
		if b, _ := os.ReadFile(aside[0]); string(b) != `{"version":1,"disabled":["a"` {
			t.Errorf("set aside with %q, want the content intact", b)
		}
		if err := d.r.Disable(t.Context(), "a"); err != nil {
			t.Fatal(err)
		}
		if h, err := holds.Open(dir, boot1).Load(); err != nil || !slices.Equal(h.Disabled, []string{"a"}) {
			t.Errorf("holds file after a disable: %+v, %v; want a disabled", h, err)
		}
	})
}

// TestDisableNotSaved: when the holds file cannot be written, Disable and
// Enable change nothing and say why; a stop is still done (the write
// failure is logged).
func TestDisableNotSaved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, _, d := runHeld(t, spec("a"), spec("b"))
		if err := d.r.Disable(t.Context(), "b"); err != nil {
			t.Fatal(err)
		}
		// A non-empty directory at the file's name: no rename replaces it,
		// whoever runs the test.
		path := filepath.Join(d.dir, holds.FileName)
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(path, "x"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := d.r.Disable(t.Context(), "a"); err == nil || !strings.Contains(err.Error(), "unit a not disabled") {
			t.Errorf("Disable: got %v, want it to say a is not disabled", err)
		}
		wantRow(t, d.r, "a", "running", false, false)
		if err := d.r.Enable(t.Context(), "b", true); err == nil || !strings.Contains(err.Error(), "unit b not enabled") {
			t.Errorf("Enable: got %v, want it to say b is not enabled", err)
		}
		wantRow(t, d.r, "b", "disabled", true, false)
		if err := d.r.Stop(t.Context(), "a"); err != nil {
			t.Fatal(err)
		}
		wantRow(t, d.r, "a", "stopped", false, true)
	})
}

// TestDisableRefusals: unknown names are ErrUnknownUnit; a disabled name
// whose file is gone can still be enabled.
func TestDisableRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, fs, d := runHeld(t, spec("a"))
		if err := d.r.Disable(t.Context(), "nope"); !errors.Is(err, control.ErrUnknownUnit) {
			t.Errorf("Disable nope: got %v, want ErrUnknownUnit", err)
		}
		if err := d.r.Enable(t.Context(), "nope", true); !errors.Is(err, control.ErrUnknownUnit) {
			t.Errorf("Enable nope: got %v, want ErrUnknownUnit", err)
		}
		if err := d.r.Disable(t.Context(), "a"); err != nil {
			t.Fatal(err)
		}
		fs.del("a")
		reloadNow(t, d.r)
		if err := d.r.Enable(t.Context(), "a", true); err != nil {
			t.Errorf("Enable of a disabled name no longer declared: %v", err)
		}
		if h, err := holds.Open(d.dir, boot1).Load(); err != nil || len(h.Disabled)+len(h.Stopped) != 0 {
			t.Errorf("holds file after: %+v, %v; want empty", h, err)
		}
	})
}
