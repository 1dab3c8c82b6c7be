package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/events"
	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	scriptCmds["fakedaemon"] = cmdFakeDaemon
}

// cmdFakeDaemon is the script command `fakedaemon FILE`: it serves a
// scripted control.Backend, described by the JSON file FILE (a fakeScript),
// over control.Server on the socket hermesctl would use ($HERMES_SOCKET, else
// the XDG default), until the script ends. It returns once the socket
// listens, so the next command may dial at once. Every Backend call is
// appended as one line to $WORK/calls.
func cmdFakeDaemon(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: fakedaemon FILE")
	}
	var sc fakeScript
	if err := json.Unmarshal([]byte(ts.ReadFile(args[0])), &sc); err != nil {
		ts.Fatalf("fakedaemon: %s: %v", args[0], err)
	}
	socket := ts.Getenv("HERMES_SOCKET")
	if socket == "" {
		socket = filepath.Join(ts.Getenv("XDG_RUNTIME_DIR"), "hermes", "hermesd.sock")
	}
	ln, err := control.Listen(socket, nil)
	ts.Check(err)
	b := &fakeDaemon{script: sc, work: ts.Getenv("WORK"), calls: ts.MkAbs("calls")}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// The server logs from its own goroutines, and ts.Logf is for the
	// script's goroutine only: collect, and hand over once Serve is done.
	var (
		logMu sync.Mutex
		logs  []string
	)
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		logs = append(logs, fmt.Sprintf(format, args...))
	}
	bus := events.New(events.Options{})
	for _, e := range sc.Events {
		bus.Publish(e)
	}
	// Paths are relative to $WORK in the script; a daemon reports them
	// absolute.
	p := sc.Paths
	for _, f := range []*string{&p.Config, &p.Units, &p.State, &p.Socket, &p.Logs} {
		if *f != "" && !filepath.IsAbs(*f) {
			*f = ts.MkAbs(*f)
		}
	}
	srv := control.NewServer(b, control.Options{Logf: logf, Events: bus, Version: sc.Version, Paths: p})
	go func() { done <- srv.Serve(ctx, ln) }()
	ts.Defer(func() {
		cancel()
		if err := <-done; err != nil {
			ts.Logf("fakedaemon: %v", err)
		}
		for _, l := range logs {
			ts.Logf("fakedaemon: %s", l)
		}
	})
}

// fakeScript is what a fake daemon answers.
type fakeScript struct {
	Status control.Status    `json:"status"`
	Plan   control.Plan      `json:"plan"`
	Logs   map[string]string `json:"logs"` // unit → log file, relative to $WORK
	Fail   map[string]string `json:"fail"` // unit → why its start/restart is refused (ErrConflict)
	// Paths are what GET /v1/paths answers, relative to $WORK; none: the
	// daemon does not report them (an older hermesd).
	Paths control.Paths `json:"paths"`
	// Ownership transfer (script_adopt_test.go).
	Adopt   map[string]control.Adopted `json:"adopt"`  // "pid N" or "pgid N" → what adopt answers
	Refuse  map[string]string          `json:"refuse"` // "pid N" or "pgid N" → why adopt is refused
	Orphans []control.Orphan           `json:"orphans"`
	// Events is the daemon's event history (events_test.go), in order;
	// their seq is given by the bus.
	Events []events.Event `json:"events"`
	// Version is what GET /v1/version answers.
	Version control.VersionInfo `json:"version"`
}

// fakeDaemon implements control.Backend from a fakeScript; start and stop
// change the unit's state as a daemon would.
type fakeDaemon struct {
	work, calls string
	bus         *events.Bus // nil: changes are not published

	mu     sync.Mutex
	script fakeScript // guarded by mu
}

func (d *fakeDaemon) recordLocked(format string, args ...any) {
	f, err := os.OpenFile(d.calls, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	fmt.Fprintf(f, format+"\n", args...)
	f.Close()
}

func (d *fakeDaemon) unitLocked(name string) (*control.Unit, error) {
	for i := range d.script.Status.Units {
		if u := &d.script.Status.Units[i]; u.Name == name {
			return u, nil
		}
	}
	return nil, fmt.Errorf("%w %q", control.ErrUnknownUnit, name)
}

func (d *fakeDaemon) Status(_ context.Context, units ...string) (control.Status, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.recordLocked("status %v", units)
	st := d.script.Status
	st.Units = slices.Clone(st.Units)
	if len(units) == 0 {
		return st, nil
	}
	st.Units = st.Units[:0:0]
	for _, name := range units {
		u, err := d.unitLocked(name)
		if err != nil {
			return control.Status{}, err
		}
		st.Units = append(st.Units, *u)
	}
	return st, nil
}

func (d *fakeDaemon) Start(_ context.Context, unit string) error {
	return d.act("start", unit, "running")
}

func (d *fakeDaemon) Stop(_ context.Context, unit string) error {
	return d.act("stop", unit, "inactive")
}

func (d *fakeDaemon) Restart(_ context.Context, unit string) error {
	return d.act("restart", unit, "running")
}

// onUnit records the call (format and args, one line of $WORK/calls),
// then calls f with unit's row, under d.mu. A unit the script does not
// have is control.ErrUnknownUnit, and f is not called.
func (d *fakeDaemon) onUnit(unit string, f func(u *control.Unit) error, format string, args ...any) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.recordLocked(format, args...)
	u, err := d.unitLocked(unit)
	if err != nil {
		return err
	}
	return f(u)
}

func (d *fakeDaemon) act(verb, unit, state string) error {
	return d.onUnit(unit, func(u *control.Unit) error {
		if why, ok := d.script.Fail[unit]; ok && verb != "stop" {
			return fmt.Errorf("%s cannot %s: %s: %w", unit, verb, why, control.ErrConflict)
		}
		from := u.State
		u.State = control.UnitState(state)
		if state == "inactive" {
			u.PID, u.PGID, u.Ready, u.Uptime, u.RSS, u.Ports = 0, 0, false, 0, 0, nil
		}
		d.bus.Publish(events.Event{Kind: events.UnitState, Unit: unit, From: from, State: control.UnitState(state), Reason: verb + " by command"})
		return nil
	}, "%s %s", verb, unit)
}

func (d *fakeDaemon) Reload(_ context.Context, dryRun bool) (control.Plan, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.recordLocked("reload dry_run=%v", dryRun)
	return d.script.Plan, nil
}

func (d *fakeDaemon) LogPath(_ context.Context, unit string) (string, error) {
	var path string
	err := d.onUnit(unit, func(*control.Unit) error {
		p, ok := d.script.Logs[unit]
		if !ok {
			return fmt.Errorf("%s has no log file: %w", unit, control.ErrConflict)
		}
		path = filepath.Join(d.work, p)
		return nil
	}, "log %s", unit)
	return path, err
}

func (d *fakeDaemon) Kill(_ context.Context, unit string, sig syscall.Signal, whom control.Whom) error {
	return d.onUnit(unit, func(*control.Unit) error { return nil }, "kill %s signal=%d whom=%s", unit, sig, whom)
}

func (d *fakeDaemon) ReloadUnit(_ context.Context, unit string) error {
	return d.onUnit(unit, func(*control.Unit) error { return nil }, "reload %s", unit)
}

func (d *fakeDaemon) ResetFailed(_ context.Context, unit string) error {
	return d.onUnit(unit, func(*control.Unit) error { return nil }, "reset-failed %s", unit)
}
