package main

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/proc"
)

// faultSupStop stops hermesd's death supervisor (SIGSTOP) while hermesd
// runs. hermesd must not be wedged by it: a unit's restart returns (its
// spawn fails with the reason rather than hangs), and status answers and
// says the supervisor is stopped. Then, by the schedule, either the
// supervisor is continued first and hermesd's supervisor health must come
// back to ok before hermesd is killed, or hermesd is killed while its
// supervisor is stopped and the supervisor continued afterwards. Either way
// nothing owned may outlive hermesd (afterDeath checks it).
const faultSupStop = "supervisor-stopped"

// answerBound is how long hermesd may take to answer a restart or a status
// with its supervisor stopped before the harness calls it wedged. It is a
// hang detector, not a latency target: the restart includes the old
// instance's stop.
const answerBound = 30 * time.Second

// stopSupervisor plays faultSupStop and ends with hermesd killed by SIGKILL;
// the caller waits for its exit.
func (h *harness) stopSupervisor(ctx context.Context) {
	kill := func() { h.d.cmd.Process.Signal(syscall.SIGKILL) }
	st, err := h.status(ctx)
	if err != nil {
		h.violate("status before stopping the supervisor: %v", err)
		kill()
		return
	}
	sup := st.Supervisor.PID
	if sup == 0 {
		h.violate("no death supervisor runs with owned units running (status: %+v)", st.Supervisor)
		kill()
		return
	}
	if err := syscall.Kill(sup, syscall.SIGSTOP); err != nil {
		h.violate("stop supervisor %d: %v", sup, err)
		kill()
		return
	}
	var cont sync.Once
	resume := func() { cont.Do(func() { syscall.Kill(sup, syscall.SIGCONT) }) }
	defer resume()
	// kill returns before the stop takes effect (the target stops when it
	// next runs): the fault is in place once the kernel says so.
	deadline := time.Now().Add(answerBound)
	for {
		if st, err := proc.ReadStat(sup); err != nil || st.State == 'T' {
			break
		}
		if time.Now().After(deadline) {
			h.violate("supervisor %d not stopped %v after SIGSTOP", sup, answerBound)
			break
		}
		time.Sleep(time.Millisecond)
	}

	names := unitNames(owned)
	unit := names[h.sched.intn(len(names))]
	rctx, cancel := context.WithTimeout(ctx, answerBound)
	err = h.restartUnit(rctx, unit)
	cancel()
	if errors.Is(err, context.DeadlineExceeded) {
		h.violate("restart of %s did not return within %v with supervisor %d stopped: hermesd is wedged", unit, answerBound, sup)
	}
	if st, err := h.status(ctx); err != nil {
		h.violate("status with supervisor %d stopped: %v", sup, err)
	} else if st.Supervisor.Health.State != control.HealthStopped {
		h.violate("status with supervisor %d stopped says health %q, want stopped…", sup, st.Supervisor.Health)
	}

	if h.sched.intn(2) == 0 {
		resume()
		deadline = time.Now().Add(answerBound)
		for {
			st, err := h.status(ctx)
			if err == nil && st.Supervisor.Health.State == control.HealthOK {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				h.violate("supervisor health %v after SIGCONT: got %q (status error %v), want ok", answerBound, st.Supervisor.Health, err)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		kill()
		return
	}
	kill()
	// Continued only once hermesd is dead: it reads the lines written
	// before the death, then EOF, and kills what is registered.
	if !h.d.exited(10 * time.Second) {
		return // deliver reports it
	}
	resume()
}
