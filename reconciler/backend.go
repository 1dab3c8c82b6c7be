package reconciler

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
)

var _ control.Backend = (*Reconciler)(nil)

// Status reports every unit (or the named ones), released groups and config
// errors. An unknown name is control.ErrUnknownUnit. It is served from a
// snapshot Run's goroutine published (statusnap.go): while Run is busy,
// the state at the end of one of its recent steps.
func (r *Reconciler) Status(ctx context.Context, names ...string) (control.Status, error) {
	s, err := r.snapshot(ctx)
	if err != nil {
		return control.Status{}, err
	}
	st, rel, err := s.view(names)
	if err != nil {
		return control.Status{}, err
	}
	if r.opt.Supervisor != nil {
		st.Supervisor = r.opt.Supervisor()
	}
	if r.opt.Proxy != nil {
		st.Proxy = r.opt.Proxy()
	}
	// /proc is read here, on the caller's goroutine: with hundreds of
	// units, reading it on Run's would hold every other caller and event.
	// A released group found ended is left out, and Run drops its row.
	r.served.rss.fill(st.Units)
	st.Recovery = recovery(s.ended, s.left)
	out := st.Units[:0]
	for _, u := range st.Units {
		if u.State == control.StateReleased {
			g := rel[0]
			rel = rel[1:]
			if !groupAlive(g) {
				r.post(releasedGone{g})
				continue
			}
			u.Ready = g.Leader.Alive()
		}
		out = append(out, u)
	}
	st.Units = out
	for _, n := range names {
		if st.Loading.IsZero() && !slices.ContainsFunc(st.Units, func(u control.Unit) bool { return u.Name == n }) {
			return control.Status{}, unknownUnit(n)
		}
	}
	return st, nil
}

func unknownUnit(name string) error { return fmt.Errorf("unit %s: %w", name, control.ErrUnknownUnit) }

// status builds the status on Run's goroutine, without reading /proc; rel
// holds the groups of the released rows, in their order.
func (r *Reconciler) status() (st control.Status, rel []supervisor.Group) {
	st = r.statusHeader()
	fileErr := r.fileErrors()
	st.Units = make([]control.Unit, 0, len(r.units)+len(r.released)) // a row a unit (and error rows, rarely)
	for _, u := range r.order() {
		st.Units = append(st.Units, r.unitStatus(u, fileErr[u.spec.Name]))
	}
	st.Units = append(st.Units, r.unloadedRows()...)
	for _, s := range r.released {
		st.Units = append(st.Units, releasedRow(s))
		rel = append(rel, s.Group)
	}
	return st, rel
}

// statusHeader is the status without its unit rows: the daemon and the
// config errors (Status adds the supervisor and the proxy).
func (r *Reconciler) statusHeader() control.Status {
	return control.Status{Daemon: r.opt.Daemon, Units: []control.Unit{}, ConfigErrors: wireErrors(r.errs)}
}

// fileErrors maps a unit's name to the error of its unit file, the first
// one reported for that file.
func (r *Reconciler) fileErrors() map[string]string {
	fileErr := map[string]string{}
	for _, e := range r.errs {
		n, ok := r.unitFileOf(e)
		if _, seen := fileErr[n]; ok && !seen {
			fileErr[n] = "unit file invalid, last good version kept: " + wireError(e).String()
		}
	}
	return fileErr
}

// unloadedRows are the rows, in file order, of the unit files that did
// not load and whose unit this reconciler does not have (no good version
// of the file is kept: none ever loaded, or it was removed since): state
// error, and the file's first error as file:line:col: message. So status
// names such a unit rather than calling it unknown.
func (r *Reconciler) unloadedRows() []control.Unit {
	var out []control.Unit
	seen := map[string]bool{}
	for _, e := range r.errs {
		n, ok := r.unitFileOf(e)
		if !ok || seen[n] || r.units[n] != nil {
			continue
		}
		seen[n] = true
		out = append(out, control.Unit{Name: n, State: control.StateError, Error: wireError(e).String()})
	}
	return out
}

// unitFileOf is the unit a config error is about, if it is a unit file's
// (in Options.UnitsDir when that is set: not hermes.yaml, whose errors
// come with the units').
func (r *Reconciler) unitFileOf(e *units.Error) (string, bool) {
	if e.File == "" || r.opt.UnitsDir != "" && filepath.Dir(e.File) != filepath.Clean(r.opt.UnitsDir) {
		return "", false
	}
	return units.NameOf(e.File)
}

// unitStatus is u's status row; fileErr is the error of its unit file, or "".
func (r *Reconciler) unitStatus(u *unit, fileErr string) control.Unit {
	n := u.spec.Name
	cu := control.Unit{
		Name: n, Description: u.spec.Description, State: r.stateWord(u), Ownership: ownership(*u.spec),
		Restarts: u.restarts, Adopted: u.adopted(), Ready: u.state == Running,
		Ports: u.spec.Ports, Log: r.logOf(u), Requires: u.spec.Requires,
		Disabled: r.disabled[n] && !u.external, Masked: r.masked[n] && !u.external,
		Stopped: u.held && !r.disabled[n] && !r.masked[n] && !u.spec.IsJob() && !u.external,
	}
	if rn := u.run; u.state.active() {
		cu.PID, cu.PGID, cu.Cgroup = rn.group.Leader.PID, rn.group.PGID, rn.group.Cgroup // Uptime: statusSnap.view
		switch {
		case !rn.main.IsZero():
			cu.PID = rn.main.PID // forking: the daemon, not its launcher
			if rn.mainPGID > 0 {
				cu.PGID = rn.mainPGID
			}
		case rn.launched || rn.left > 0:
			cu.PID = 0 // the leader is gone, and no process is the main one (yet)
		}
		cu.Daemonized = rn.left
	}
	cu.Error = rowError(u, fileErr)
	if cu.State == control.StateStopped && u.state == Waiting && fileErr == "" {
		d := r.heldWith(u, nil)
		cu.Error = fmt.Sprintf("stopped with %s, which it requires; starts again when %s starts", d, d)
	}
	if code, ok := u.exitStatus(); ok {
		cu.ExitStatus = &code
	}
	cu.Job = r.jobStatus(u)
	if !u.external {
		describe(&cu, u.spec)
	}
	return cu
}

// rowError is the error a status row shows for u, the first that applies:
// a name taken by an adopted group, its unit file's error, what it waits
// for, whose listener its tcp probe reaches, its last error, or the
// processes it left behind.
func rowError(u *unit, fileErr string) string {
	switch {
	case u.external && u.declared != nil:
		return fmt.Sprintf("name %s is taken by an adopted group (pgid %d); stop it or rename the unit file", u.spec.Name, u.run.group.PGID)
	case fileErr != "":
		return fileErr
	case u.state == Waiting:
		return u.waitMsg
	case u.state == Starting && u.run.listener != nil:
		return u.run.listener.Error()
	case u.err != nil:
		return u.err.Error()
	case u.state.active() && u.run.left > 0:
		return daemonized(u.run.left)
	}
	return ""
}

// releasedRow is the status row of a released group.
func releasedRow(s Survivor) control.Unit {
	return control.Unit{
		Name: s.Unit, State: control.StateReleased, PID: s.Group.Leader.PID, PGID: s.Group.PGID,
		Cgroup: s.Group.Cgroup, Ownership: s.Ownership, Log: s.Log,
	}
}

// RSSMaxAge is how old a unit's RSS in status may be before a status
// asks for it to be read again. Reading it costs a /proc file per unit:
// status asked many times a second (a dashboard, a script's loop) reads
// each unit's at most once per RSSMaxAge, and a status never waits for
// those reads but for a pid's first: it shows the value read last and
// leaves the new reads to a goroutine (rssCache.fill).
const RSSMaxAge = time.Second

// rssCache keeps the RSS of unit leaders read by Status, which runs on its
// callers' goroutines. Its zero value is ready to use.
type rssCache struct {
	read func(pid int) int64 // nil: rss; tests count reads
	mu   sync.Mutex
	m    map[int]rssRead // guarded by mu; by pid
	// refreshing: a goroutine reads the stale pids (refresh); guarded by
	// mu. One at a time: a status asked while it reads adds no reads.
	refreshing bool
}

type rssRead struct {
	bytes int64
	at    time.Time
}

// fill sets the RSS of every unit of us that has a pid and is not a
// released row. It reads /proc at once only for the pids it never read
// (so a new unit's first status shows its RSS); the pids read more than
// RSSMaxAge ago show their last value and are read again by a goroutine,
// so that a status of thousands of units is not held by thousands of
// /proc reads. Pids no longer listed are forgotten. The reads run without
// the lock.
func (c *rssCache) fill(us []control.Unit) {
	now := time.Now()
	var fresh, stale []int
	c.mu.Lock()
	if c.m == nil {
		c.m = map[int]rssRead{}
	}
	live := make(map[int]bool, len(us))
	for _, u := range us {
		if u.State == control.StateReleased || u.PID <= 0 {
			continue
		}
		live[u.PID] = true
		switch rd, ok := c.m[u.PID]; {
		case !ok:
			fresh = append(fresh, u.PID)
		case now.Sub(rd.at) >= RSSMaxAge:
			stale = append(stale, u.PID)
		}
	}
	for pid := range c.m {
		if !live[pid] {
			delete(c.m, pid)
		}
	}
	if len(stale) > 0 && !c.refreshing {
		c.refreshing = true
		go c.refresh(stale)
	}
	c.mu.Unlock()
	c.store(fresh, c.readAll(fresh), now)
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range us {
		if rd, ok := c.m[us[i].PID]; ok && us[i].State != control.StateReleased {
			us[i].RSS = rd.bytes
		}
	}
}

// refresh reads pids again, off the status that found them stale.
func (c *rssCache) refresh(pids []int) {
	now := time.Now()
	got := c.readAll(pids)
	c.mu.Lock()
	c.refreshing = false
	c.mu.Unlock()
	c.store(pids, got, now)
}

func (c *rssCache) readAll(pids []int) []int64 {
	read := c.read
	if read == nil {
		read = rss
	}
	got := make([]int64, len(pids))
	for i, pid := range pids {
		got[i] = read(pid)
	}
	return got
}

// store records what was read of pids at at.
func (c *rssCache) store(pids []int, got []int64, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, pid := range pids {
		c.m[pid] = rssRead{got[i], at}
	}
}

// rss is the resident set of pid in bytes, 0 when unreadable (or where
// the platform's process table has none: darwin).
func rss(pid int) int64 {
	n, _ := proc.RSS(pid)
	return n
}

// declared is the unit named name, unless none is (or its file is
// removed): control.ErrUnknownUnit. The loop's goroutine.
func (r *Reconciler) declared(name string) (*unit, error) {
	if u := r.units[name]; u != nil && !u.removed() {
		return u, nil
	}
	return nil, fmt.Errorf("unit %s: %w", name, control.ErrUnknownUnit)
}

// Start wants the unit running again: it clears a failure, the start
// limit and a stop by command, and starts it once its dependencies allow.
// It returns the unit's error when the start failed at once (port held,
// start limit, spawn). A disabled unit is not started (control.ErrConflict):
// Enable first.
func (r *Reconciler) Start(ctx context.Context, name string) error {
	return r.doErr(ctx, func(ctx context.Context) error {
		u, err := r.declared(name)
		if err != nil {
			return err
		}
		if err := r.refuseMasked(name); err != nil {
			return err
		}
		if err := r.refuseDisabled(name); err != nil {
			return err
		}
		if err := r.startRefused(name); err != nil {
			return err
		}
		if u.state == Done && u.spec.RemainAfter {
			return nil // remain_after_exit: done counts as active; stop it to run it again
		}
		u.enabled, u.held = true, false
		r.setStop(name, false)
		if !u.state.active() {
			u.stopTimer(timerBackoff)
			u.state, u.starts, u.attempt, u.err = Inactive, nil, 0, nil
		}
		r.pace.asked = u
		r.reconcile(ctx)
		r.pace.asked = nil
		return u.startErr()
	})
}

// Stop stops the unit and returns once its group is empty (or ctx ends).
// The unit stays stopped until Start: a reload or an edit of its file
// switches it to the new version without starting it, and with
// Options.Holds a restart of hermesd in the same boot keeps it stopped.
// Only removing its file and adding it again (a new unit) starts it.
func (r *Reconciler) Stop(ctx context.Context, name string) error {
	return r.stopAndWait(ctx, name, stopCommand)
}

// Restart stops the unit (waiting for its group to be empty) and starts it
// again; it returns once the new run is started. A disabled unit is
// refused, as by Start.
func (r *Reconciler) Restart(ctx context.Context, name string) error {
	return r.stopAndWait(ctx, name, stopRestart)
}

func (r *Reconciler) stopAndWait(ctx context.Context, name string, why stopReason) error {
	return r.doAwait(ctx, func(ctx context.Context) (<-chan error, error) {
		u, err := r.declared(name)
		if err != nil {
			return nil, err
		}
		if why == stopRestart {
			if err := r.refuseMasked(name); err != nil {
				return nil, err
			}
			if err := r.refuseDisabled(name); err != nil {
				return nil, err
			}
		}
		wait := r.stopAsked(u, why)
		if wait == nil {
			r.reconcile(ctx)
			if why == stopRestart {
				return nil, u.startErr()
			}
		}
		return wait, nil
	})
}

// stopAsked does what a caller's Stop (why stopCommand) or Restart
// (stopRestart) does to u, on Run's goroutine: u is held, or wanted
// again, and stopped; an inactive u is left inactive. It returns the
// channel the stop's outcome arrives on (stopping.join), nil when u was
// not active.
func (r *Reconciler) stopAsked(u *unit, why stopReason) <-chan error {
	u.enabled, u.held = why == stopRestart, why == stopCommand
	// A job's stop ends its run, not its schedule: nothing to keep.
	if !u.external && !u.spec.IsJob() && !r.disabled[u.spec.Name] && !r.masked[u.spec.Name] {
		r.setStop(u.spec.Name, why == stopCommand)
	}
	u.stopTimer(timerBackoff)
	if why == stopRestart {
		u.starts, u.attempt = nil, 0
	}
	if !u.state.active() {
		u.state, u.err = Inactive, nil
		return nil
	}
	r.stop(u, why, nil)
	return u.stop.join()
}

// await waits for the stop a caller joined (wait, from stopping.join; nil
// when there is none), ctx, or the reconciler's end.
func (r *Reconciler) await(ctx context.Context, wait <-chan error) error {
	if wait == nil {
		return nil
	}
	select {
	case err := <-wait:
		r.served.snaps.answered()
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-r.done:
		return ErrStopped
	}
}

// Reload re-reads the units directory and applies the plan, or with dryRun
// only returns it.
func (r *Reconciler) Reload(ctx context.Context, dryRun bool) (control.Plan, error) {
	return r.reload(ctx, r.opt.Load, dryRun, true)
}

// LogPath is the unit's log file.
func (r *Reconciler) LogPath(ctx context.Context, name string) (string, error) {
	return ask(ctx, r, func(context.Context) (string, error) {
		if u := r.units[name]; u != nil {
			return r.logOf(u), nil
		}
		for _, s := range r.released {
			if s.Unit == name && s.Log != "" {
				return s.Log, nil
			}
		}
		return "", fmt.Errorf("unit %s: %w", name, control.ErrUnknownUnit)
	})
}
