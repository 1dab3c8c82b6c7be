package reconciler

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/diag"
	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
)

// readopt runs once at Run start, before the first reconcile, in a gateway:
// each adoptable or persist_on_release group of a dead owner whose ledger
// entry the kernel confirms (see trust: never a recycled pid, never a
// stranger named by a crafted entry) is taken over without a new spawn. A
// declared unit gets its group back as adopted, a released one included
// (it was given up, and is declared again: adopted back rather than
// doubled); a persist group no longer declared is listed as released; an
// adoptable group no longer declared is stopped, as a removed unit would
// be. Groups whose owner is alive belong to it and are left alone. Then
// the owned groups that dead hermesd owners left (see recover) are ended
// or counted.
func (r *Reconciler) readopt(ctx context.Context, l Loaded) {
	if r.opt.Role != units.RoleGateway || r.opt.Checkpoint == nil {
		return
	}
	svs, err := r.opt.Checkpoint.Survivors(ctx)
	if err != nil {
		r.log.Error("ledger not read; nothing re-adopted", "err", err)
		return
	}
	declared := map[string]units.Spec{}
	for _, s := range l.Specs {
		declared[s.Name] = *s
	}
	for _, s := range svs {
		if s.OwnerAlive {
			continue
		}
		if err := r.trust(s); err != nil {
			if !errors.Is(err, proc.ErrGone) {
				r.log.Warn("survivor not re-adopted nor signalled: the kernel contradicts its ledger entry", "unit", s.Unit, "pid", s.Group.Leader.PID, "err", err)
			}
			continue
		}
		spec, ok := declared[s.Unit]
		if s.State == ledger.Released && !ok { // given up on purpose, and not declared: listed
			r.addReleased(s)
			continue
		}
		if r.units[s.Unit] != nil {
			r.log.Warn("a second survivor of the same unit left alone", "unit", s.Unit, "pid", s.Group.Leader.PID)
			continue
		}
		if !ok && s.Ownership == units.PersistOnRelease {
			if err := r.opt.Checkpoint.Released(ctx, s); err != nil {
				r.log.Warn("ledger: release not recorded", "unit", s.Unit, "err", err)
			}
			r.addReleased(s)
			r.log.Info("survivor no longer declared; released", "unit", s.Unit, "pid", s.Group.Leader.PID)
			continue
		}
		if !ok {
			spec = units.Spec{Name: s.Unit, Ownership: s.Ownership}
		}
		if s.State == ledger.Released { // declared again: adopted back, not doubled
			if err := r.adoptBack(ctx, spec, s); err != nil {
				r.log.Warn("released survivor declared again, not adopted back", "unit", s.Unit, "pid", s.Group.Leader.PID, "err", err)
				r.addReleased(s)
			}
			continue
		}
		if err := r.adoptRun(ctx, &unit{spec: &spec, hash: hash(spec), enabled: ok}, s); err != nil {
			r.log.Warn("survivor not re-adopted: cannot watch its exit", "unit", s.Unit, "pid", s.Group.Leader.PID, "err", err)
			continue
		}
		r.log.Info("survivor re-adopted", "unit", s.Unit, "pid", s.Group.Leader.PID, "pgid", s.Group.PGID)
	}
	r.recover(ctx, declared)
}

// adoptRun makes s's group the running, adopted run of u and puts u in
// r.units: the leader's exit is watched (it is not our child), its log
// continues, and the ledger records it as ours.
func (r *Reconciler) adoptRun(ctx context.Context, u *unit, s Survivor) error {
	rn := r.newRun(nil, s.Group, time.Now())
	exited, err := r.opt.Spawner.WatchExit(rn.ctx, s.Group)
	if err != nil {
		rn.cancel()
		return err
	}
	u.logPath, u.err = s.Log, nil
	if u.logPath == "" {
		u.logPath = r.logPath(*u.spec)
	}
	r.runAdopted(u, rn, exited)
	r.resumeJobRun(rn.ctx, u, s.Group.Leader)
	if r.units[u.spec.Name] != u {
		r.units[u.spec.Name] = u
		r.reorder()
	}
	if err := r.opt.Checkpoint.Adopted(ctx, s); err != nil {
		r.log.Warn("ledger: adoption not recorded", "unit", s.Unit, "err", err)
	}
	return nil
}

// verifier is the part of the ledger Checkpoint that holds an entry
// against the kernel (ledger.Check). Without it, a leader identity that
// is alive is all the evidence there is.
type verifier interface {
	Verify(s Survivor) error
}

// trust says whether s's ledger entry may be acted on (re-adopted, adopted
// back, signalled): nil when the kernel confirms it, an error wrapping
// proc.ErrGone when its leader has exited, another error (ledger.ErrUntrusted)
// when the kernel contradicts it. The ledger is evidence, not authority.
// It reads /proc.
func (r *Reconciler) trust(s Survivor) error {
	if v, ok := r.opt.Checkpoint.(verifier); ok {
		return v.Verify(s)
	}
	if !s.Group.Leader.Alive() {
		return fmt.Errorf("leader %s: %w", s.Group.Leader, proc.ErrGone)
	}
	return nil
}

// Adopter is the part of the supervisor that `hermesctl adopt` and
// `release` need. The Spawner of Supervised implements it; with a Spawner
// that does not, Adopt, Orphans --yes and Release are refused.
type Adopter interface {
	// Own registers g with the death supervisor, so that it dies with this
	// owner, and marks its ledger entry adopted (adding one if there is
	// none). It re-validates the leader's identity at the moment of the
	// call. A group it refuses to own is an error wrapping
	// supervisor.ErrUnsafe (a recycled pid, the owner's or the supervisor's
	// own group, a cgroup outside the hermes tree) or proc.ErrGone (the
	// leader has exited, or the group is empty): adopt reports either as a
	// refusal, any other error as a failure.
	Own(ctx context.Context, g supervisor.Group) error
	// Release unregisters g, so that it outlives this owner, and marks its
	// ledger entry released. A group that was never registered (a
	// survivor) is not an error.
	Release(ctx context.Context, g supervisor.Group) error
}

func (s ownerSpawner) Own(ctx context.Context, g supervisor.Group) error {
	return s.o.Own(ctx, g)
}

func (s ownerSpawner) Release(ctx context.Context, g supervisor.Group) error {
	if err := s.o.Release(ctx, g); err != nil && !errors.Is(err, supervisor.ErrUnknown) {
		return err
	}
	return nil
}

// Record is a ledger entry of another owner whose group is alive.
type Record struct {
	Survivor
	Argv []string
	Role units.Role // its owner's
}

// recorder is the part of the ledger Checkpoint that adopt reads: every
// live entry of another owner, whatever its ownership. Ledger's Checkpoint
// implements it; without it, adopt cannot see other owners' claims and
// `adopt --orphans` finds nothing.
type recorder interface {
	Records(ctx context.Context) ([]Record, error)
}

// Records lists the ledger entries of other owners whose group is alive.
func (c ledgerCheckpoint) Records(ctx context.Context) ([]Record, error) {
	return others(ctx, c, ledger.Entry.Alive, func(e ledger.Entry) Record {
		return Record{Survivor: survivorOf(e), Argv: e.Argv, Role: e.Role}
	})
}

// guards are the groups adopt never takes, and the uid it adopts for.
type guards struct {
	selfPID, selfPGID int // hermesd itself
	supervisorPID     int // the death supervisor leads its own group; 0 when none runs
	callerPGID        int // the group of the hermesctl that asked; 0 unknown
	uid               int // hermesd's effective uid; 0 (root) adopts anyone's
	// ancestors of the hermesctl that asked and of hermesd, nearest
	// first: a group holding one of them is never adopted. An adopted
	// group dies with hermesd; were it the group of the shell that ran
	// hermesctl (which differs from hermesctl's own under job control) or
	// of the terminal that started hermesd, the user's terminal would die
	// with hermesd.
	ancestors []ancestor
}

// ancestor is a process above the caller or hermesd, and its group.
type ancestor struct {
	pid, pgid int
	comm      string
	of        string // "the hermesctl that asked" or "hermesd"
}

func (r *Reconciler) guards(req control.AdoptRequest) guards {
	g := guards{selfPID: os.Getpid(), selfPGID: syscall.Getpgrp(), callerPGID: req.CallerPGID, uid: os.Geteuid()}
	if r.opt.Supervisor != nil {
		g.supervisorPID = r.opt.Supervisor().PID
	}
	if req.CallerPID > 0 {
		g.ancestors = append(g.ancestors, ancestorsOf(req.CallerPID, "the hermesctl that asked")...)
	}
	g.ancestors = append(g.ancestors, ancestorsOf(os.Getpid(), "hermesd")...)
	return g
}

// maxAncestors bounds the walk up the process tree (a pid namespace is
// not deeper in practice; the bound only guards against a cycle read
// across pid reuse).
const maxAncestors = 1024

// ancestorsOf lists the processes above pid up to (not including) init,
// each with its group, from /proc. of names whose ancestors they are.
func ancestorsOf(pid int, of string) []ancestor {
	var out []ancestor
	st, err := proc.ReadStat(pid)
	for i := 0; err == nil && st.PPID > 1 && i < maxAncestors; i++ {
		if st, err = proc.ReadStat(st.PPID); err == nil {
			out = append(out, ancestor{pid: st.PID, pgid: st.PGID, comm: st.Comm, of: of})
		}
	}
	return out
}

// check refuses the groups adopt never takes, whatever asked for them (a
// pid, a pgid, or a ledger record in the orphan sweep): pgid ≤ 1,
// hermesd's own group, its supervisor's, the caller's, and a group holding
// an ancestor of the caller or of hermesd.
func (gd guards) check(pgid int) error {
	switch {
	case pgid <= 1:
		return refused("pgid %d: a group id must be greater than 1 (0 and 1 are the kernel's and init's)", pgid)
	case pgid == gd.selfPGID || pgid == gd.selfPID:
		return refused("group %d is hermesd's own group", pgid)
	case gd.supervisorPID != 0 && pgid == gd.supervisorPID:
		return refused("group %d is hermesd's death supervisor", pgid)
	case gd.callerPGID != 0 && pgid == gd.callerPGID:
		return refusedFix("start the program in a group of its own (setsid) or adopt it from another shell", "group %d is your own (the group of the hermesctl that asked): it would die with hermesd", pgid)
	}
	for _, a := range gd.ancestors {
		if a.pgid == pgid {
			return refusedFix("adopt the program's own group instead (start it with setsid)", "group %d holds pid %d (%s), an ancestor of %s: adopted, it would be killed when hermesd dies, and your terminal with it", pgid, a.pid, a.comm, a.of)
		}
	}
	return nil
}

func refused(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), control.ErrRefused)
}

// refusedFix is a refusal with what to do apart (diag.Error's Fix): its
// text is the refusal's, "what; fix: refused", and hermesctl prints the
// fix below the summary.
func refusedFix(fix, format string, args ...any) error {
	return fmt.Errorf("%w: %w", &diag.Error{What: fmt.Sprintf(format, args...), Fix: fix}, control.ErrRefused)
}

// vetGroup resolves an adopt request (the group of pid, or pgid) to a group
// and refuses what must never be adopted: an exited process, pgid ≤ 1,
// hermesd's own group, its supervisor's, the caller's, and a group with a
// member of another user (unless hermesd runs as root). The leader is the
// process whose pid is the pgid, or, if it has exited, the group's lowest
// live pid, whose identity then stands for the group.
func vetGroup(pid, pgid int, gd guards) (supervisor.Group, error) {
	if pid != 0 {
		st, err := proc.ReadStat(pid)
		if err != nil || st.Zombie() {
			return supervisor.Group{}, refused("process %d has already exited; nothing to adopt", pid)
		}
		pgid = st.PGID
	}
	if err := gd.check(pgid); err != nil {
		return supervisor.Group{}, err
	}
	members, err := proc.GroupMembers(pgid)
	if err != nil {
		return supervisor.Group{}, fmt.Errorf("adopt group %d: %w", pgid, err)
	}
	if len(members) == 0 {
		return supervisor.Group{}, refused("group %d has no live process: it has already exited", pgid)
	}
	if gd.uid != 0 {
		for _, m := range members {
			if u, err := proc.UID(m); err == nil && u != gd.uid {
				return supervisor.Group{}, refusedFix("run hermesd as root to adopt other users' processes", "process %d of group %d belongs to uid %d; hermesd runs as uid %d and adopts only that user's processes", m, pgid, u, gd.uid)
			}
		}
	}
	lead := members[0]
	if slices.Contains(members, pgid) {
		lead = pgid
	}
	id, err := proc.Read(lead)
	if err != nil {
		return supervisor.Group{}, refused("group %d: its process %d has just exited", pgid, lead)
	}
	return supervisor.Group{PGID: pgid, Leader: id}, nil
}

// validName: what --as accepts, and what derived names are made of.
var validName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`) })

// derivedName is a unit name for an adopted group: the leader's command
// and the pgid ("llama-server-4242").
func derivedName(g supervisor.Group) string {
	comm := "group"
	if st, err := proc.ReadStat(g.Leader.PID); err == nil && st.Comm != "" {
		comm = st.Comm
	}
	b := []byte(comm)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	name := strings.TrimLeft(string(b), "._-")
	if name == "" {
		name = "group"
	}
	return fmt.Sprintf("%s-%d", name, g.PGID)
}

// Adopt makes hermesd own a group that something else started (SPEC §8):
// registered with the death supervisor, recorded in the ledger as adopted,
// shown in status as an adopted unit, stopped by `hermesctl stop`, killed if
// hermesd dies. Refusals wrap control.ErrRefused.
//
// The adopted group keeps its name while it lives: a unit file of the same
// name that appears later does not start; status shows the clash on the
// name's row, and the file's unit starts once the group is gone (exited,
// stopped, or released and then ended).
func (r *Reconciler) Adopt(ctx context.Context, req control.AdoptRequest) (control.Adopted, error) {
	ad, ok := r.opt.Spawner.(Adopter)
	if !ok {
		return control.Adopted{}, refused("this hermesd has no supervisor that can adopt groups")
	}
	if (req.PID == 0) == (req.PGID == 0) {
		return control.Adopted{}, fmt.Errorf("%w: adopt takes a pid or a pgid", control.ErrBadRequest)
	}
	gd := r.guards(req)
	return ask(ctx, r, func(ctx context.Context) (control.Adopted, error) {
		g, err := vetGroup(req.PID, req.PGID, gd)
		if err != nil {
			return control.Adopted{}, err
		}
		return r.take(ctx, ad, g, req.As, gd)
	})
}

// take owns g under name (derived when ""), on Run's goroutine. g has been
// resolved (vetGroup, or a ledger record); take refuses a group hermesd
// already runs, one another live owner holds in the ledger, and a name in
// use, then registers it (Own re-validates the leader's identity) and adds
// it as an adopted unit whose leader's exit is watched.
func (r *Reconciler) take(ctx context.Context, ad Adopter, g supervisor.Group, name string, gd guards) (control.Adopted, error) {
	if r.shut != nil {
		return control.Adopted{}, ErrStopped
	}
	if err := gd.check(g.PGID); err != nil {
		return control.Adopted{}, err
	}
	for _, u := range r.units {
		if u.state.active() && u.run.group.PGID == g.PGID {
			return control.Adopted{}, refused("group %d is already owned by this hermesd, as unit %s", g.PGID, u.spec.Name)
		}
	}
	recorded := false
	if rc, ok := r.opt.Checkpoint.(recorder); ok {
		recs, err := rc.Records(ctx)
		if err != nil {
			return control.Adopted{}, fmt.Errorf("adopt group %d: read the ledger: %w", g.PGID, err)
		}
		for _, rec := range recs {
			if rec.Group.PGID == g.PGID && rec.OwnerAlive && rec.State != ledger.Released {
				return control.Adopted{}, refusedFix("stop it there, or stop that owner first", "group %d belongs to unit %s of another live owner (pid %d, %s)", g.PGID, rec.Unit, rec.Owner.PID, rec.Role)
			}
			recorded = recorded || rec.Group.PGID == g.PGID
		}
	}
	// Not in the ledger (yet: an owner's record trails its spawn by up to
	// one journal flush): the leader's own evidence says whose it is.
	if o, ok := supervisor.SpawnerOf(g.Leader.PID); ok && !recorded && o.PID != os.Getpid() {
		return control.Adopted{}, refusedFix("stop it there, or stop that owner first", "group %d belongs to another live owner (pid %d), as its leader %d's cgroup, tags or mark say", g.PGID, o.PID, g.Leader.PID)
	}
	if name == "" {
		name = derivedName(g)
	}
	if !validName().MatchString(name) {
		return control.Adopted{}, fmt.Errorf("%w: --as %q: a unit name is letters, digits, '.', '_', '@', '-' (at most 64)", control.ErrBadRequest, name)
	}
	if r.units[name] != nil {
		return control.Adopted{}, refusedFix("choose another name with --as", "a unit named %s exists already", name)
	}
	g.Unit = name
	if err := ad.Own(ctx, g); err != nil {
		if errors.Is(err, supervisor.ErrUnsafe) || errors.Is(err, proc.ErrGone) {
			return control.Adopted{}, refused("adopt group %d: %v", g.PGID, err)
		}
		return control.Adopted{}, fmt.Errorf("adopt group %d: %w", g.PGID, err)
	}
	spec := units.Spec{Name: name, Ownership: units.Owned}
	u := &unit{spec: &spec, hash: hash(spec), external: true}
	rn := r.newRun(nil, g, time.Now())
	exited, err := r.opt.Spawner.WatchExit(rn.ctx, g)
	if err != nil { // an exit now: what is left of the group is stopped
		r.log.Warn("adopted group's leader exited already", "unit", name, "pid", g.Leader.PID, "err", err)
		c := make(chan struct{})
		close(c)
		exited = c
	}
	r.runAdopted(u, rn, exited)
	r.units[name] = u
	r.reorder()
	r.log.Info("group adopted", "unit", name, "pgid", g.PGID, "leader", g.Leader.PID)
	members, _ := proc.GroupMembers(g.PGID)
	cmd := ""
	if argv, err := proc.Cmdline(g.Leader.PID); err == nil {
		cmd = strings.Join(ledger.Redact(argv), " ")
	}
	return control.Adopted{Unit: name, PGID: g.PGID, PID: g.Leader.PID, Command: cmd, Members: len(members)}, nil
}

// runAdopted makes rn, a run of a group whose leader is not our child,
// u's running run under a new gen: the leader's exit (exited closed,
// through a pidfd: WatchExit) is u's exitEvent, unless the run ends first.
func (r *Reconciler) runAdopted(u *unit, rn *run, exited <-chan struct{}) {
	u.gen, u.run, u.state = r.nextGen(), rn, Running
	r.postAt(rn.ctx, exited, exitEvent{name: u.spec.Name, gen: u.gen})
}

// postAt posts ev once c is closed, unless ctx, a run's, ends first.
func (r *Reconciler) postAt(ctx context.Context, c <-chan struct{}, ev any) {
	r.wg.Go(func() {
		select {
		case <-c:
			r.post(ev)
		case <-ctx.Done():
		}
	})
}
