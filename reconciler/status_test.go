//go:build linux

package reconciler

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
	"golang.org/x/sys/unix"
)

// survivorCheckpoint is a ledger holding survivors of a dead owner, each
// of which the kernel is taken to confirm (Verify).
type survivorCheckpoint struct{ svs []Survivor }

func (c survivorCheckpoint) Survivors(context.Context) ([]Survivor, error) { return c.svs, nil }
func (survivorCheckpoint) Adopted(context.Context, Survivor) error         { return nil }
func (survivorCheckpoint) Released(context.Context, Survivor) error        { return nil }
func (survivorCheckpoint) Verify(Survivor) error                           { return nil }
func (survivorCheckpoint) Who(context.Context, int) (Survivor, bool, error) {
	return Survivor{}, false, nil
}

// TestUptimeOfReadopted: a survivor re-adopted from the ledger shows its
// process's age, from its kernel start time, not the time since this
// reconciler took it over.
func TestUptimeOfReadopted(t *testing.T) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		t.Fatal(err)
	}
	tick := time.Second / proc.ClockTicks
	boot := time.Duration(ts.Nano())
	ago := min(time.Hour, boot/2) // how long before now the survivor started
	leader := proc.Identity{PID: 5_100_000, StartTime: uint64((boot - ago) / tick)}
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, spec("web"))
		h.run(New(Options{
			Role: units.RoleGateway, Spawner: h.fs, StateDir: t.TempDir(), Load: h.load,
			Checkpoint: survivorCheckpoint{[]Survivor{{Unit: "web", Group: supervisor.Group{Unit: "web", PGID: leader.PID, Leader: leader}}}},
		}))
		synctest.Wait()
		u := h.unit("web")
		if !u.Adopted || u.State != "running" || u.PID != leader.PID {
			t.Fatalf("web: state %s pid %d adopted %v, want running, re-adopted with pid %d", u.State, u.PID, u.Adopted, leader.PID)
		}
		if u.Uptime < ago || u.Uptime > ago+time.Minute {
			t.Errorf("web: got uptime %v, want its process's age, %v", u.Uptime, ago)
		}
	})
}

// TestStatusDescription: a unit's row carries its file's description.
func TestStatusDescription(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, units.RoleGateway,
			spec("web", func(s *units.Spec) { s.Description = "the web front end" }),
			spec("bare"),
		)
		synctest.Wait()
		for _, tc := range []struct{ unit, want string }{
			{"web", "the web front end"},
			{"bare", ""},
		} {
			if got := h.unit(tc.unit).Description; got != tc.want {
				t.Errorf("%s: got description %q, want %q", tc.unit, got, tc.want)
			}
		}
	})
}

// TestStatusUnloadedFile: a unit file that did not load, of which no good
// version is kept, has a row of its own (state error, its first error as
// file:line:col), and status finds it by name; hermes.yaml's errors, which
// come with the units', name no unit.
func TestStatusUnloadedFile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, spec("web"))
		h.errs = []*units.Error{
			{File: "/etc/hermes/hermes.yaml", Line: 2, Column: 1, Msg: `unknown key "defualts"`},
			{File: "/units/bad.yaml", Line: 3, Column: 7, Msg: `unknown key "comand" (did you mean "command"?)`},
			{File: "/units/bad.yaml", Line: 5, Column: 1, Msg: "a second error"},
		}
		h.run(New(Options{Role: units.RoleGateway, Spawner: h.fs, StateDir: t.TempDir(), UnitsDir: "/units", Load: h.load}))
		synctest.Wait()
		st, err := h.r.Status(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, u := range st.Units {
			names = append(names, u.Name)
		}
		if want := []string{"web", "bad"}; !slices.Equal(names, want) {
			t.Errorf("got rows %q, want %q", names, want)
		}
		st, err = h.r.Status(t.Context(), "bad")
		if err != nil {
			t.Fatalf("status bad: %v", err)
		}
		want := control.Unit{Name: "bad", State: "error", Error: `/units/bad.yaml:3:7: unknown key "comand" (did you mean "command"?)`}
		if len(st.Units) != 1 || !reflect.DeepEqual(st.Units[0], want) {
			t.Errorf("status bad: got %+v, want %+v", st.Units, want)
		}
		if _, err := h.r.Status(t.Context(), "hermes"); !errors.Is(err, control.ErrUnknownUnit) {
			t.Errorf("status hermes: got %v, want ErrUnknownUnit", err)
		}
	})
}

// TestStartLimitKeepsCause: once the start limit stops the restarts, the
// row says how the last run ended, as well as the limit.
func TestStartLimitKeepsCause(t *testing.T) {
	const fix = "; fix the unit, then run `hermesctl start svc`"
	for _, tc := range []struct {
		name     string
		spawnErr error // every spawn fails so; nil: every run exits 1
		want     string
	}{
		{"program not in PATH", fmt.Errorf("spawn svc: %w", &supervisor.NotFoundError{Name: "xyz"}),
			`start limit hit: 3 starts in 1m0s; last: "xyz" is not in PATH` + fix},
		{"exit status", nil, "start limit hit: 3 starts in 1m0s; last: exit status 1" + fix},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, restarting(units.RestartAlways, time.Second, 3))
				if tc.spawnErr != nil {
					h.fs.fail["svc"] = tc.spawnErr
				}
				h.run(New(Options{Role: units.RoleGateway, Spawner: h.fs, StateDir: t.TempDir(), Load: h.load, Rand: func() float64 { return 0.5 }}))
				synctest.Wait()
				for range 3 {
					if tc.spawnErr == nil {
						h.fs.last(t, "svc").exit(errExit1)
						synctest.Wait()
					}
					time.Sleep(2 * time.Second)
					synctest.Wait()
				}
				u := h.unit("svc")
				if u.State != "failed" || !errors.Is(h.unitErr("svc"), ErrStartLimit) {
					t.Fatalf("state %s error %q, want failed with the start limit", u.State, u.Error)
				}
				if u.Error != tc.want {
					t.Errorf("got error %q, want %q", u.Error, tc.want)
				}
			})
		})
	}
}

// TestStatusSaysWhomAUnitWaitsFor: a unit held by its after: or requires:
// says, on its row, which unit it waits for and what of it; one whose
// required unit was stopped by command is stopped with it.
func TestStatusSaysWhomAUnitWaitsFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, units.RoleGateway,
			spec("db", func(s *units.Spec) { s.Ready = units.Ready{Notify: true} }),
			spec("api", func(s *units.Spec) { s.After = []string{"db"} }),
			spec("cache"),
			spec("worker", func(s *units.Spec) { s.Requires = []string{"cache"} }),
		)
		synctest.Wait()
		if err := h.r.Stop(t.Context(), "cache"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		for _, tc := range []struct{ unit, state, want string }{
			{"api", "starting", "waiting for db to be ready"},
			{"worker", "stopped", "stopped with cache, which it requires; starts again when cache starts"},
		} {
			if u := h.unit(tc.unit); string(u.State) != tc.state || u.PID != 0 || u.Error != tc.want {
				t.Errorf("%s: got state %s pid %d error %q, want %s, not spawned, %q", tc.unit, u.State, u.PID, u.Error, tc.state, tc.want)
			}
		}
	})
}
