package supervisor

import (
	"fmt"
	"syscall"

	"github.com/hermes-units/hermes/proc"
)

// Signal sends sig to every member of g and returns: a signal, not a stop
// (`hermesctl kill`). What follows is the group's own doing: a member that
// dies of it is an exit like any other, which the caller's watchers see.
// Members are found and signalled as Stop finds and signals them: in
// pgroup mode after a look for escapees (registered with g, and signalled
// with it), a cgroup's members through pidfds after checking that each is
// still in the cgroup, a process group only while its id is not a
// recycled leader's. A group not registered here (a re-adopted survivor)
// is signalled as Stop signals one; an unsafe group (the owner's own, the
// supervisor's, pgid ≤ 1) is refused with ErrUnsafe, and nothing is sent.
func (o *Owner) Signal(g Group, sig syscall.Signal) error {
	o.mu.Lock()
	r := o.findLocked(g)
	if r == nil {
		if err := o.safeLocked(g); err != nil {
			o.mu.Unlock()
			return err
		}
		r = &reg{g: o.foreignCgroupLocked(g)}
	}
	scan := o.mode == ModePGroup && r.key != ""
	o.mu.Unlock()
	if scan {
		o.scanOf(r)
		o.awaitEscapees(r)
	}
	o.signal(r, sig)
	return nil
}

// SignalProcess sends sig to id's process alone, through a process handle
// (a pidfd on Linux) opened before its start time is checked: a recycled
// pid is never signalled. A process that is gone, or whose pid now names
// another, is proc.ErrGone.
func SignalProcess(id proc.Identity, sig syscall.Signal) error {
	if id.PID <= 1 {
		return fmt.Errorf("signal pid %d: %w", id.PID, ErrUnsafe)
	}
	h, err := proc.OpenHandle(id.PID)
	if err != nil {
		return fmt.Errorf("signal pid %d: %w", id.PID, proc.ErrGone)
	}
	defer h.Close()
	if now, err := proc.Read(id.PID); err != nil || now.StartTime != id.StartTime {
		return fmt.Errorf("signal pid %d: %w", id.PID, proc.ErrGone)
	}
	if err := h.Signal(sig); err != nil {
		return fmt.Errorf("signal pid %d: %w", id.PID, err)
	}
	return nil
}
