package main

import (
	"context"
	"fmt"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/events"
)

// The fake daemon's control.Enabler (script_control_test.go): disable and
// enable change the unit's row as hermesd would, and are recorded in
// $WORK/calls.

var _ control.Enabler = (*fakeDaemon)(nil)

func (d *fakeDaemon) Disable(_ context.Context, unit string) error {
	return d.onUnit(unit, func(u *control.Unit) error {
		from := u.State
		u.State, u.Disabled, u.Stopped = "disabled", true, false
		u.PID, u.PGID, u.Ready, u.Uptime, u.RSS, u.Ports = 0, 0, false, 0, 0, nil
		d.bus.Publish(events.Event{Kind: events.UnitState, Unit: unit, From: from, State: u.State, Reason: "disabled by command"})
		return nil
	}, "disable %s", unit)
}

func (d *fakeDaemon) Enable(_ context.Context, unit string, start bool) error {
	return d.onUnit(unit, func(u *control.Unit) error {
		from := u.State
		if u.Disabled {
			u.State, u.Disabled, u.Stopped = "stopped", false, true
		}
		if start {
			if why, ok := d.script.Fail[unit]; ok {
				return fmt.Errorf("%s cannot start: %s: %w", unit, why, control.ErrConflict)
			}
			u.State, u.Stopped = "running", false
		}
		if u.State != from {
			d.bus.Publish(events.Event{Kind: events.UnitState, Unit: unit, From: from, State: u.State, Reason: "enabled by command"})
		}
		return nil
	}, "enable %s start=%v", unit, start)
}

// The fake daemon's control.Masker: mask and unmask change the unit's row
// as hermesd would, and are recorded in $WORK/calls.

var _ control.Masker = (*fakeDaemon)(nil)

func (d *fakeDaemon) Mask(_ context.Context, unit string, now bool) error {
	return d.onUnit(unit, func(u *control.Unit) error {
		from := u.State
		u.Masked, u.Stopped = true, false
		if now {
			u.State = "stopped"
			u.PID, u.PGID, u.Ready, u.Uptime, u.RSS, u.Ports = 0, 0, false, 0, 0, nil
		}
		if u.State != from {
			d.bus.Publish(events.Event{Kind: events.UnitState, Unit: unit, From: from, State: u.State, Reason: "masked by command"})
		}
		return nil
	}, "mask %s now=%v", unit, now)
}

func (d *fakeDaemon) Unmask(_ context.Context, unit string) error {
	return d.onUnit(unit, func(u *control.Unit) error {
		if u.Masked && u.State == "stopped" {
			u.Stopped = true
		}
		u.Masked = false
		return nil
	}, "unmask %s", unit)
}
