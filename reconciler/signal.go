package reconciler

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
)

// Signals to a running unit, and its reload (control.Signaller): `hermesctl
// kill` and `hermesctl reload UNIT`. Neither is a stop: nothing of the
// unit's state changes here. A unit that dies of a signal has exited, and
// its exit is handled as any other (onExit: the restart policy applies);
// a reload leaves it running.

var _ control.Signaller = (*Reconciler)(nil)

// Signals is a Spawner that signals a running group without stopping it
// (supervisor.Owner.Signal, supervisor.SignalProcess). Without it, Kill
// and a reload_signal: are refused.
type Signals interface {
	// Signal sends sig to every member of g (pgroup mode: escapees too).
	Signal(g supervisor.Group, sig syscall.Signal) error
	// SignalProcess sends sig to id alone, never to a recycled pid.
	SignalProcess(id proc.Identity, sig syscall.Signal) error
}

// target is what a signal or a reload of a running unit needs, read on
// Run's goroutine: the unit's spec, its group, its main process (zero
// when it has none now) and its log file.
type target struct {
	spec  units.Spec
	group supervisor.Group
	main  proc.Identity
	log   string
}

// running reads the target of the unit name, which must be starting or
// running: an unknown unit is control.ErrUnknownUnit, one with no group
// (or whose group is being stopped) control.ErrConflict, saying what it
// was asked for (verb: "signal", "reload").
func (r *Reconciler) running(ctx context.Context, name, verb string) (target, error) {
	return ask(ctx, r, func(context.Context) (target, error) {
		u, err := r.declared(name)
		switch {
		case err != nil:
			return target{}, err
		case u.state != Starting && u.state != Running:
			return target{}, fmt.Errorf("unit %s is %s: there is nothing to %s; `hermesctl start %s` starts it: %w", name, r.stateWord(u), verb, name, control.ErrConflict)
		}
		return target{spec: *u.spec, group: u.run.group, main: mainOf(u.run), log: r.logOf(u)}, nil
	})
}

// mainOf is rn's main process: a forking unit's daemon once found, else
// the leader while it runs; zero when the leader is gone and no process is
// the main one (a forking unit's daemon not found yet, a simple unit that
// daemonized).
func mainOf(rn *run) proc.Identity {
	switch {
	case !rn.main.IsZero():
		return rn.main
	case rn.launched || rn.left > 0:
		return proc.Identity{}
	}
	return rn.group.Leader
}

// errNoMain is a signal to the main process of a unit that has none now.
func errNoMain(name string) error {
	return fmt.Errorf("unit %s has no main process now (its leader exited and no process is its main one); signal every process with --whom all: %w", name, control.ErrConflict)
}

// signals is the spawner's Signals, or an error saying it has none.
func (r *Reconciler) signals(name string) (Signals, error) {
	s, ok := r.opt.Spawner.(Signals)
	if !ok {
		return nil, fmt.Errorf("unit %s: this hermesd cannot signal a unit: %w", name, errors.ErrUnsupported)
	}
	return s, nil
}

// Kill sends sig to whom of the unit name (its main process, or every
// process of its group) and returns once it is sent. It is no stop: the
// unit is not held, and if it dies its restart policy applies.
func (r *Reconciler) Kill(ctx context.Context, name string, sig syscall.Signal, whom control.Whom) error {
	sg, err := r.signals(name)
	if err != nil {
		return err
	}
	t, err := r.running(ctx, name, "signal")
	if err != nil {
		return err
	}
	r.log.Info("signalling unit", "unit", name, "signal", units.Signal(sig), "whom", whom)
	if whom == control.WhomMain {
		if t.main.IsZero() {
			return errNoMain(name)
		}
		if err := sg.SignalProcess(t.main, sig); err != nil {
			return fmt.Errorf("unit %s: %w", name, err)
		}
		return nil
	}
	if err := sg.Signal(t.group, sig); err != nil {
		return fmt.Errorf("unit %s: %w", name, err)
	}
	return nil
}

// DefaultReloadTimeout bounds a reload: command of a unit whose file sets
// no timeouts.start.
const DefaultReloadTimeout = 90 * time.Second

// ReloadUnit asks the running unit name to reload: its reload_signal: to
// its main process (returning once sent), or its reload: command, run as
// the unit runs (its directory, environment, env files and identity,
// MAINPID set to its main process), its output appended to the unit's
// log, and waited for: the reload fails when the command does not exit 0
// within the unit's start timeout (then its group is stopped). The
// command is an owned spawn of its own: it dies with hermesd. A unit
// whose file has neither key is control.ErrConflict.
func (r *Reconciler) ReloadUnit(ctx context.Context, name string) error {
	t, err := r.running(ctx, name, "reload")
	if err != nil {
		return err
	}
	s := t.spec
	where := ""
	if s.File != "" {
		where = " of " + s.File
	}
	switch {
	case s.ReloadSignal != 0:
		sg, err := r.signals(name)
		if err != nil {
			return err
		}
		if t.main.IsZero() {
			return errNoMain(name)
		}
		r.log.Info("reloading unit", "unit", name, "signal", s.ReloadSignal)
		if err := sg.SignalProcess(t.main, s.ReloadSignal.Syscall()); err != nil {
			return fmt.Errorf("unit %s: reload: %w", name, err)
		}
		return nil
	case len(s.Reload) > 0:
		r.log.Info("reloading unit", "unit", name, "command", s.Reload)
		if err := r.runReload(ctx, t); err != nil {
			return fmt.Errorf("unit %s: reload: %w", name, err)
		}
		return nil
	}
	return fmt.Errorf("unit %s cannot be reloaded: its file%s sets neither reload_signal: (like reload_signal: HUP) nor reload: (a command); add one, or restart it with `hermesctl restart %s`: %w",
		name, where, name, control.ErrConflict)
}

// runReload runs t's reload: command and waits for its exit, within the
// unit's start timeout and ctx: past either its group is stopped.
func (r *Reconciler) runReload(ctx context.Context, t target) error {
	s := t.spec
	dir := s.Workdir
	if dir == "" {
		dir = r.opt.UnitsDir
	}
	fileEnv, err := units.ReadEnvFiles(s.EnvFiles)
	if err != nil {
		return err
	}
	env := r.env(s, "", append(userEnv(s.Exec), fileEnv...))
	if !t.main.IsZero() {
		env = append(env, "MAINPID="+strconv.Itoa(t.main.PID))
	}
	f, err := r.openLog(t.log)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	p, err := r.opt.Spawner.Spawn(context.WithoutCancel(ctx), supervisor.Spec{
		Unit: s.Name, Argv: s.Reload, Env: env, Dir: dir, Stdout: f, Stderr: f,
		Ownership: units.Owned, LogPath: t.log, Exec: s.Exec,
	})
	f.Close() // the child holds its own
	if err != nil {
		return err
	}
	bound := s.Timeouts.Start
	if bound <= 0 {
		bound = DefaultReloadTimeout
	}
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case <-p.Done():
		return p.Err()
	case <-timer.C:
		err = fmt.Errorf("the command did not exit within %v (timeouts.start); it was stopped", bound)
	case <-ctx.Done():
		err = ctx.Err()
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopGrace(s)+5*time.Second)
	defer cancel()
	if serr := r.opt.Spawner.Stop(stopCtx, p.Group(), syscall.SIGTERM, stopGrace(s)); serr != nil {
		r.log.Warn("reload command not stopped", "unit", s.Name, "err", serr)
	}
	return err
}
