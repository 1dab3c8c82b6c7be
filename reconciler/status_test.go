package reconciler

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

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
