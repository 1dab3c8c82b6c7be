package reconciler

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/hermes-units/hermes/units"
)

// TestStoppedStaysStopped: a unit stopped with `hermesctl stop` is not
// started by reloads or edits of its file, whether they come during the
// stop or after it; it takes the new version, which Start then runs. A
// unit removed and declared again is a new unit and starts.
func TestStoppedStaysStopped(t *testing.T) {
	for _, tc := range []struct {
		name string
		// change happens while the stop is held (during) or after it
		// ended; it edits the file, or removes it and adds it back.
		during, readd bool
		wantSpawns    int // of a after the change, before any Start
	}{
		{"edit after the stop", false, false, 1},
		{"edit during the stop", true, false, 1},
		{"removed and added back after the stop", false, true, 2},
		{"removed and added back during the stop", true, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sp := newGatedUnits("a")
				fs := &files{specs: map[string]units.Spec{"a": spec("a", withArgv("1"))}}
				r := runOver(t, sp, fs)
				stopped := make(chan error, 1)
				go func() { stopped <- r.Stop(t.Context(), "a") }()
				synctest.Wait()
				if !tc.during {
					sp.open("a")
					if err := <-stopped; err != nil {
						t.Fatal(err)
					}
				}
				if tc.readd {
					fs.del("a")
					reloadNow(t, r)
				}
				fs.set(spec("a", withArgv("2")))
				reloadNow(t, r)
				if tc.during {
					sp.open("a")
					if err := <-stopped; err != nil {
						t.Fatal(err)
					}
				}
				synctest.Wait()
				if n := len(sp.spawnTimes("a")); n != tc.wantSpawns {
					t.Fatalf("a spawned %d times after the change, want %d", n, tc.wantSpawns)
				}
				if tc.readd {
					return
				}
				if st, _ := stateOf(t, r, "a"); st != Inactive {
					t.Errorf("a is %v after the change, want inactive", st)
				}
				// A second edit changes nothing either.
				fs.set(spec("a", withArgv("3")))
				reloadNow(t, r)
				if n := len(sp.spawnTimes("a")); n != 1 {
					t.Errorf("a spawned %d times after a second edit, want 1", n)
				}
				if err := r.Start(t.Context(), "a"); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				last := sp.lastArgv(t)
				if !slices.Equal(last, []string{"/bin/sleep", "3"}) {
					t.Errorf("start ran %q, want the file's last version", last)
				}
				// Started again, a unit follows its edits as before.
				fs.set(spec("a", withArgv("4")))
				reloadNow(t, r)
				if st, _ := stateOf(t, r, "a"); st != Running || len(sp.spawnTimes("a")) != 3 {
					t.Errorf("a is %v with %d spawns after an edit once started, want running with 3", st, len(sp.spawnTimes("a")))
				}
			})
		})
	}
}

// TestUserStopDuringReloadStop: `hermesctl stop` while a reload's stop is
// under way still takes the file's new version, and does not start it.
func TestUserStopDuringReloadStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp := newGatedUnits("a")
		fs := &files{specs: map[string]units.Spec{"a": spec("a", withArgv("1"))}}
		r := runOver(t, sp, fs)
		fs.set(spec("a", withArgv("2")))
		reloadNow(t, r)
		stopped := make(chan error, 1)
		go func() { stopped <- r.Stop(context.WithoutCancel(t.Context()), "a") }()
		synctest.Wait()
		sp.open("a")
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := len(sp.spawnTimes("a")); n != 1 {
			t.Errorf("a spawned %d times, want 1 (stopped by command)", n)
		}
		if err := r.Start(t.Context(), "a"); err != nil {
			t.Fatal(err)
		}
		last := sp.lastArgv(t)
		if !slices.Equal(last, []string{"/bin/sleep", "2"}) {
			t.Errorf("start ran %q, want the version the reload brought", last)
		}
	})
}
