package main

import (
	"context"
	"fmt"

	"github.com/hermes-units/hermes/control"
)

// The fake daemon's ownership transfer: adopt answers from the script's
// "adopt" map (key "pid N" or "pgid N"), refusing what it names in
// "refuse"; orphans answers the script's report; release marks the unit
// released.

func (d *fakeDaemon) Adopt(_ context.Context, req control.AdoptRequest) (control.Adopted, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	key := fmt.Sprintf("pgid %d", req.PGID)
	if req.PID != 0 {
		key = fmt.Sprintf("pid %d", req.PID)
	}
	d.recordLocked("adopt %s as=%q", key, req.As)
	if why, ok := d.script.Refuse[key]; ok {
		return control.Adopted{}, fmt.Errorf("%s: %w", why, control.ErrRefused)
	}
	a, ok := d.script.Adopt[key]
	if !ok {
		return control.Adopted{}, fmt.Errorf("process %s has already exited; nothing to adopt: %w", key, control.ErrRefused)
	}
	if req.As != "" {
		a.Unit = req.As
	}
	d.script.Status.Units = append(d.script.Status.Units, control.Unit{
		Name: a.Unit, State: "running", PID: a.PID, PGID: a.PGID, Ownership: "owned", Adopted: true, Ready: true,
	})
	return a, nil
}

func (d *fakeDaemon) Orphans(_ context.Context, req control.OrphansRequest) (control.OrphanReport, error) {
	adopt := req.Adopt
	d.mu.Lock()
	defer d.mu.Unlock()
	d.recordLocked("orphans adopt=%v", adopt)
	rep := control.OrphanReport{Orphans: d.script.Orphans, Adopted: []control.Adopted{}}
	if adopt {
		for _, o := range rep.Orphans {
			if o.Adoptable {
				rep.Adopted = append(rep.Adopted, control.Adopted{Unit: o.Unit, PGID: o.PGID, PID: o.PID, Command: o.Command, Members: 1})
			}
		}
	}
	return rep, nil
}

func (d *fakeDaemon) Release(_ context.Context, unit string) (control.Released, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.recordLocked("release %s", unit)
	u, err := d.unitLocked(unit)
	if err != nil {
		return control.Released{}, err
	}
	if u.State != "running" {
		return control.Released{}, fmt.Errorf("unit %s is %s: only a running group can be released: %w", unit, u.State, control.ErrRefused)
	}
	u.State, u.Adopted = "released", false
	return control.Released{Unit: unit, PGID: u.PGID, PID: u.PID}, nil
}
