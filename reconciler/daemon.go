package reconciler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/internal/diag"
	"github.com/hermes-units/hermes/internal/safefile"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
)

// Daemons is what a Spawner offers for programs that leave their group's
// leader behind: forking units (the launcher daemonizes and exits 0) and
// simple units that daemonize. A Spawner without it runs every unit as a
// simple one whose end is its leader's exit (the reconciler's fakes).
// Supervised implements it; every method is safe for concurrent use and is
// called from goroutines the reconciler owns.
type Daemons interface {
	// Members lists g's live processes (pgroup mode: after looking for
	// escapees, which are then registered with g and die with the owner).
	Members(g supervisor.Group) []proc.Identity
	// Empty reports whether nothing is left of g.
	Empty(g supervisor.Group) bool
	// StopMain sends sig to main alone, then after grace KILLs what is
	// left of g, and returns once g is empty (or ctx ends).
	StopMain(ctx context.Context, g supervisor.Group, main proc.Identity, sig syscall.Signal, grace time.Duration) error
}

// Events of daemons.
type (
	// mainEvent: the main process of a forking unit was found (err nil),
	// or could not be (err says why).
	mainEvent struct {
		name string
		gen  uint64
		main proc.Identity
		err  error
	}
	// goneEvent: the main process of a forking unit exited, or nothing is
	// left of a simple unit that daemonized (err nil).
	goneEvent struct {
		name string
		gen  uint64
		err  error
	}
)

// Poll periods of what no event reports: a pid file being written (for at
// most timeouts.start), and the end of a daemonized group with no main pid.
const (
	mainPollEvery  = 50 * time.Millisecond
	emptyPollEvery = 250 * time.Millisecond
)

// ErrMainExited is the cause of a forking unit's failure when its main
// process exits: its status cannot be read (it is not hermesd's child).
var ErrMainExited = errors.New("main process exited")

// daemonized is the status and log text of a simple unit whose leader
// exited 0 leaving n processes.
func daemonized(n int) string {
	return fmt.Sprintf("the program daemonized (%d processes left): declare `type: forking` (and `pid_file`), or run it in the foreground (nginx: `-g 'daemon off;'`, redis: `--daemonize no`)", n)
}

// leaderLeft handles the exit of u's leader when it is not the end of the
// unit (Run's goroutine), and reports whether it did:
//   - forking, exit 0: the launcher daemonized; the main process is looked
//     for (findMain) and the unit stays starting;
//   - simple, exit 0, processes left: the program daemonized; they stay
//     registered with the unit (they die with the owner, stop stops them),
//     the unit stays up with no main pid, and status says what to do.
//
// A oneshot's leftovers are stopped with it, as systemd does.
func (r *Reconciler) leaderLeft(u *unit, ev exitEvent) bool {
	d, ok := r.opt.Spawner.(Daemons)
	if !ok || ev.err != nil || u.adopted() {
		return false
	}
	rn := u.run
	ctx, name, gen, g := rn.ctx, u.spec.Name, u.gen, rn.group
	switch u.spec.Type {
	case units.Forking:
		rn.launched = true
		deadline := rn.started.Add(u.spec.Timeouts.Start)
		if u.spec.Timeouts.Start <= 0 {
			deadline = time.Now().Add(units.BuiltinDefaults().Timeouts.Start)
		}
		pidFile := u.spec.PIDFile
		r.log.Info("unit's launcher exited 0; looking for its main process", "unit", name, "pid_file", pidFile)
		r.wg.Go(func() {
			id, err := findMain(ctx, d, g, pidFile, deadline)
			if ctx.Err() == nil {
				r.post(mainEvent{name, gen, id, err})
			}
		})
		return true
	case units.Oneshot:
		return false
	}
	if len(ev.left) == 0 {
		return false
	}
	rn.left = len(ev.left)
	r.log.Warn("unit daemonized: its leader exited 0, its processes stay with the unit", "unit", name,
		"left", rn.left, "advice", daemonized(rn.left))
	r.wg.Go(func() {
		tk := time.NewTicker(emptyPollEvery)
		defer tk.Stop()
		for !d.Empty(g) {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
			}
		}
		r.post(goneEvent{name, gen, nil})
	})
	return true
}

// onMain applies a forking unit's main process, or the failure to find it.
func (r *Reconciler) onMain(ev mainEvent) {
	u := r.units[ev.name]
	if u == nil || u.gen != ev.gen || (u.state != Starting && u.state != Running) {
		return
	}
	if ev.err != nil {
		r.stop(u, stopFailure, fmt.Errorf("unit %s: %w", u.spec.Name, ev.err))
		return
	}
	rn := u.run
	rn.main = ev.main
	if st, err := proc.ReadStat(ev.main.PID); err == nil {
		rn.mainPGID = st.PGID
	}
	r.log.Info("unit's main process found", "unit", u.spec.Name, "main", ev.main.PID, "pgid", rn.mainPGID)
	if ownership(*u.spec).Survivor() {
		r.rebase(u, ev.main)
	}
	name, gen, main, ctx := u.spec.Name, u.gen, ev.main, rn.ctx
	exited, err := r.opt.Spawner.WatchExit(ctx, supervisor.Group{Unit: name, Leader: main})
	if err != nil {
		r.stop(u, stopFailure, fmt.Errorf("main process %d: %w", main.PID, ErrMainExited))
		return
	}
	r.postAt(ctx, exited, goneEvent{name, gen, fmt.Errorf("main process %d: %w", main.PID, ErrMainExited)})
	if u.state == Starting && (u.spec.Ready == (units.Ready{}) || rn.probed) {
		r.markReady(u)
	}
}

// rebaser is the part of a Checkpoint that moves a survivor's entry from
// its launcher, which exited, to its main process: the process the next
// owner finds alive, holds against the kernel and re-adopts.
type rebaser interface {
	Rebased(ctx context.Context, old, now supervisor.Group) error
}

// rebase makes main the leader of u's group, a forking survivor's, in the
// ledger and for this reconciler: its launcher exited, and an entry led by
// it would be a dead one that no next owner re-adopts. The cgroup stays.
func (r *Reconciler) rebase(u *unit, main proc.Identity) {
	st, err := proc.ReadStat(main.PID)
	rb, ok := r.opt.Checkpoint.(rebaser)
	if !ok || err != nil {
		return
	}
	g := supervisor.Group{Unit: u.spec.Name, PGID: st.PGID, Leader: main, Cgroup: u.run.group.Cgroup}
	if err := rb.Rebased(u.run.ctx, u.run.group, g); err != nil {
		r.log.Warn("survivor's ledger entry still names its launcher: a next hermesd will not re-adopt it", "unit", u.spec.Name, "main", main.PID, "err", err)
		return
	}
	u.run.group = g
}

// daemonKeeper is a Spawner that says whether the daemon of a forking
// survivor can be told apart once its owner is gone. The daemon leaves its
// process group, and may overwrite its environment with its process title:
// only a cgroup holds it then.
type daemonKeeper interface {
	KeepsDaemons() bool
}

// forkingSurvivorRefused is why u cannot start where the Spawner keeps no
// daemons: a forking survivor whose daemon nobody could find again; nil
// when it may start.
func (r *Reconciler) forkingSurvivorRefused(u *unit) error {
	k, ok := r.opt.Spawner.(daemonKeeper)
	if u.spec.Type != units.Forking || !ownership(*u.spec).Survivor() || !ok || k.KeepsDaemons() {
		return nil
	}
	return &diag.Error{
		Where: "unit " + u.spec.Name,
		What: fmt.Sprintf("type: forking with ownership: %s needs cgroup mode: ", ownership(*u.spec)) +
			"in pgroup mode its daemon leaves the process group, and once hermesd is gone nothing tells it apart from a stranger (its process title may overwrite its environment)",
		Fix: "run it in the foreground as type: simple (nginx: -g 'daemon off;', redis: --daemonize no), make it owned, or run hermesd with --supervisor-mode cgroup",
	}
}

// onGone ends the run whose main process exited, or whose daemonized
// group emptied: what is left is stopped, then the restart policy decides
// (a group that emptied by itself is a success, a main process's exit a
// failure: its status is unknown).
func (r *Reconciler) onGone(ev goneEvent) {
	u := r.units[ev.name]
	if u == nil || u.gen != ev.gen || (u.state != Starting && u.state != Running) {
		return
	}
	r.log.Info("unit exited", "unit", u.spec.Name, "err", ev.err)
	r.stop(u, stopFailure, exitCause{ev.err})
}

// claimer is a Daemons that holds, as no unit's, the processes it found
// re-parented to it with no evidence that named a unit (pgroup mode:
// orphans), and gives one to a unit once evidence names that unit (the
// unit's pid file names it): see supervisor.Owner.Claim.
type claimer interface {
	Claim(g supervisor.Group, pid int, why string) bool
	// Unclaimed reports whether it holds as no unit's a process that
	// may be g's: one that started after g's leader.
	Unclaimed(g supervisor.Group) bool
}

// unclaimed reports whether a unit with a pid file whose launcher left no
// process may yet find its daemon among the processes d holds as no
// unit's: one started after its launcher, whose pid the daemon may not
// have written yet. Such a unit waits for its pid file (until
// timeouts.start) instead of failing at once.
func unclaimed(d Daemons, g supervisor.Group, pidFile string) bool {
	c, ok := d.(claimer)
	return ok && pidFile != "" && c.Unclaimed(g)
}

// findMain looks for the main process of a forking unit whose launcher
// exited 0 (see pickMain), until it is found, the deadline passes (the
// last reason is the error), or ctx ends. A pid file that names a process
// held as no unit's (an orphan: nothing named a unit when it was found)
// is evidence that names this one: the process is claimed for g (claim)
// before the members are weighed. A process nothing names is never the
// main one.
func findMain(ctx context.Context, d Daemons, g supervisor.Group, pidFile string, deadline time.Time) (proc.Identity, error) {
	tk := time.NewTicker(mainPollEvery)
	defer tk.Stop()
	var last proc.Identity
	for {
		left := d.Members(g)
		if claim(d, g, left, pidFile) {
			left = d.Members(g)
		}
		id, final, err := pickMain(left, pidFile)
		switch {
		case err == nil && (pidFile != "" || id == last):
			return id, nil // a guess is taken once two looks agree: a double fork's middle process is gone by then
		case err != nil && final && !(len(left) == 0 && unclaimed(d, g, pidFile)):
			return proc.Identity{}, err
		case err != nil && !time.Now().Before(deadline):
			return proc.Identity{}, err
		}
		last = id
		select {
		case <-ctx.Done():
			return proc.Identity{}, ctx.Err()
		case <-tk.C:
		}
	}
}

// pickMain names the main process among left, the processes a forking
// unit's launcher left: the pid in pidFile, which must be one of them (in
// the unit's cgroup, or descending from its launcher: its group and the
// escapees found under it); without a pid file, the one process whose
// parent is not one of them (the daemon its workers descend from). final
// says that waiting cannot help.
func pickMain(left []proc.Identity, pidFile string) (main proc.Identity, final bool, err error) {
	if len(left) == 0 {
		return proc.Identity{}, true, errors.New("the launcher exited 0 but left no process: the program did not daemonize, or its daemon died at once (see its log); a program that stays in the foreground is type: simple")
	}
	if pidFile != "" {
		return pickPIDFile(left, pidFile)
	}
	in := map[int]bool{}
	for _, id := range left {
		in[id.PID] = true
	}
	var tops []proc.Identity
	for _, id := range left {
		if st, err := proc.ReadStat(id.PID); err == nil && !in[st.PPID] {
			tops = append(tops, id)
		}
	}
	if len(tops) == 1 {
		return tops[0], false, nil
	}
	pids := make([]string, len(tops))
	for i, id := range tops {
		pids[i] = strconv.Itoa(id.PID)
	}
	return proc.Identity{}, false, fmt.Errorf("the launcher left %d processes and no single main one (pids %s): set pid_file: to the file the daemon writes its pid to", len(left), strings.Join(pids, ", "))
}

// maxPIDFile bounds what is read of a pid file: a pid and some blanks. A
// bigger file is not a pid file (a stranger's /dev/zero link or a 1 GiB
// file must not be read whole).
const maxPIDFile = 64

// readPIDFile reads a pid file the way hermesd reads any file a unit names
// (safefile): never through a symbolic link in its last component (one a
// stranger planted could name /dev/zero), never blocking on the open (a
// FIFO with no writer), only a regular file, owned by the user hermesd runs
// as or by root (a file another user owns could name any process), and at
// most maxPIDFile bytes of it. final says that waiting cannot help.
func readPIDFile(pidFile string) (b []byte, final bool, err error) {
	f, err := safefile.OpenFile(pidFile, os.O_RDONLY, 0)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, false, fmt.Errorf("pid file %s is missing: the daemon did not write it within timeouts.start; check that pid_file: matches the program's configuration", pidFile)
	case errors.Is(err, safefile.ErrSymlink), errors.Is(err, safefile.ErrNotRegular):
		return nil, false, fmt.Errorf("pid file %w", err)
	case err != nil:
		return nil, false, fmt.Errorf("pid file %s: %w", pidFile, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("pid file %s: %w", pidFile, err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() && st.Uid != 0 {
		return nil, false, &diag.Error{
			What: fmt.Sprintf("pid file %s belongs to uid %d, not to uid %d that runs hermesd (nor to root): another user could name any process in it", pidFile, st.Uid, os.Geteuid()),
			Fix:  fmt.Sprintf("remove it (rm %s), or point pid_file: to a directory of your own", safefile.Quote(pidFile)),
		}
	}
	if fi.Size() > maxPIDFile {
		return nil, true, fmt.Errorf("pid file %s holds %d bytes, not a pid", pidFile, fi.Size())
	}
	b, err = io.ReadAll(io.LimitReader(f, maxPIDFile+1))
	switch {
	case err != nil:
		return nil, false, fmt.Errorf("pid file %s: %w", pidFile, err)
	case len(b) > maxPIDFile: // it grew since the stat
		return nil, true, fmt.Errorf("pid file %s holds more than %d bytes, not a pid", pidFile, maxPIDFile)
	}
	return b, false, nil
}

// claim asks d, when it holds processes as no unit's (claimer), for the
// process pidFile names, when that is not among left (g's members): the
// pid file is evidence that names g's unit. It reports whether d gave it
// to g (then g's members are to be listed again).
func claim(d Daemons, g supervisor.Group, left []proc.Identity, pidFile string) bool {
	c, ok := d.(claimer)
	if !ok || pidFile == "" {
		return false
	}
	pid, _, err := pidOfFile(pidFile)
	if err != nil || slices.ContainsFunc(left, func(id proc.Identity) bool { return id.PID == pid }) {
		return false
	}
	return c.Claim(g, pid, "its pid file "+pidFile+" names it")
}

// pidOfFile is the pid pidFile holds (see readPIDFile); final says that
// waiting cannot help.
func pidOfFile(pidFile string) (pid int, final bool, err error) {
	b, final, err := readPIDFile(pidFile)
	if err != nil {
		return 0, final, err
	}
	pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return 0, false, fmt.Errorf("pid file %s holds %q, not a pid", pidFile, strings.TrimSpace(string(b)))
	}
	return pid, false, nil
}

func pickPIDFile(left []proc.Identity, pidFile string) (proc.Identity, bool, error) {
	pid, final, err := pidOfFile(pidFile)
	if err != nil {
		return proc.Identity{}, final, err
	}
	if i := slices.IndexFunc(left, func(id proc.Identity) bool { return id.PID == pid }); i >= 0 {
		return left[i], false, nil
	}
	if _, err := proc.Read(pid); err != nil {
		return proc.Identity{}, false, fmt.Errorf("pid file %s is stale: it names pid %d, which is not running (left by an earlier run?); the daemon did not write its own within timeouts.start", pidFile, pid)
	}
	what := ""
	if st, err := proc.ReadStat(pid); err == nil {
		what = " (" + st.Comm + ")"
	}
	return proc.Identity{}, false, fmt.Errorf("pid file %s names pid %d%s, which is not in the unit's group: a stranger (a stale file whose pid was reused?); hermes never takes it for the unit's main process", pidFile, pid, what)
}
