package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/units"
)

// Spec says what to spawn.
type Spec struct {
	Unit      string
	Argv      []string // argv[0] looked up in the PATH of Env
	Env       []string // full environment; the ledger tags are added (and replace inherited ones)
	Dir       string
	Stdin     *os.File        // nil = /dev/null
	Stdout    *os.File        // nil = /dev/null; survivors must be given files, never pipes
	Stderr    *os.File        // nil = /dev/null
	Ownership units.Ownership // recorded in the ledger and in EnvOwnership; "" = owned
	Reason    string
	LogPath   string // recorded in the ledger
	// Survive: not registered with the death supervisor, so it outlives the
	// owner; it still leads its own group (and cgroup) and is in the ledger.
	// Its cgroup is <base>/hermes-kept/<unit>.<key>, removed by whoever sees
	// the group gone: its waiter, Stop, ReleaseOnceEmpty after Own, or the
	// start of a later owner once this one is gone too.
	Survive bool
	// Foreground makes the child's group the foreground group of the
	// terminal on Stdin (a foreground command in a shell).
	Foreground bool
	// Exec is the child's user, groups, umask, nice, resource limits and
	// cgroup limits (see limits.go); its EnvFiles are the caller's to
	// read into Env.
	Exec units.Exec
}

// Child is a spawned group whose leader is our child.
type Child struct {
	Group
	Key  string // spawn key (the EnvSpawn tag of its processes)
	done chan struct{}
	err  error // set before done is closed

	amu    sync.Mutex
	after  []*afterExit // guarded by amu; the funcs of AfterExit not run or stopped yet
	exited bool         // guarded by amu; the leader is reaped: AfterExit runs f at once
}

type afterExit struct{ f func() }

// AfterExit arranges for f to run in its own goroutine once the leader
// has exited and been reaped (as Done is closed), at once if it has. stop
// ends the arrangement; it reports whether it kept f from running (false
// once f was started, or stop called before). It is Done without a
// goroutine waiting on it: an owner of thousands of children that waits
// for each exit this way holds no goroutine per child (see
// context.AfterFunc, which it follows).
func (c *Child) AfterExit(f func()) (stop func() bool) {
	a := &afterExit{f}
	c.amu.Lock()
	if c.exited {
		c.amu.Unlock()
		go f()
		return func() bool { return false }
	}
	c.after = append(c.after, a)
	c.amu.Unlock()
	return func() bool {
		c.amu.Lock()
		defer c.amu.Unlock()
		i := slices.Index(c.after, a)
		if i < 0 {
			return false
		}
		c.after = slices.Delete(c.after, i, i+1)
		return true
	}
}

// exit closes done and starts the funcs of AfterExit.
func (c *Child) exit() {
	close(c.done)
	c.amu.Lock()
	after := c.after
	c.after, c.exited = nil, true
	c.amu.Unlock()
	for _, a := range after {
		go a.f()
	}
}

// Done is closed when the leader has exited and been reaped; Err then holds
// nil or an *ExitError.
func (c *Child) Done() <-chan struct{} { return c.done }

// Err is the leader's exit: nil (status 0) or an *ExitError. Valid after Done.
func (c *Child) Err() error { return c.err }

// ExitError is a leader's unsuccessful exit.
type ExitError struct {
	Code   int            // exit status, -1 when killed by a signal
	Signal syscall.Signal // the killing signal, 0 when it exited
}

func (e *ExitError) Error() string {
	if e.Signal != 0 {
		return "killed by signal " + e.Signal.String()
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

// Status is the shell convention: the exit code, or 128+signal.
func (e *ExitError) Status() int {
	if e.Signal != 0 {
		return 128 + int(e.Signal)
	}
	return e.Code
}

// spawnSeq numbers the spawns of the process, across its owners: a spawn
// key (and the cgroup named after it) is the owner's name, which every
// Owner of one process shares, and this number, so that no two spawns of
// the process ever get the same key (a second Owner's first spawn used to
// meet the kept cgroup of the first Owner's: mkdir: file exists).
var spawnSeq atomic.Uint64

// gate is run by /bin/sh as the child in pgroup mode, and for a Survive
// child in either mode: it waits on fd 3 for the owner's "go" (sent after
// registration, and for a Survive child after its ledger record is on disk)
// and execs the program; at EOF (the owner died first) it exits without
// running it.
const gate = `IFS= read -r g <&3 && [ "$g" = go ] && exec 3<&- && exec "$@"; exit 125`

// SpawnOwned starts spec as the leader of a new process group (and cgroup,
// in cgroup mode), registers the group with the death supervisor (unless
// Survive) before the program runs, and records it in the ledger (argv
// redacted). When the leader exits, the group is released once it is empty
// and its ledger entry removed. ctx bounds the waits for the supervisor's
// answer and for the ledger; it does not kill a child that runs.
//
// A registration counts once the supervisor accepted it: a refusal (with
// the supervisor's reason, a *RefusedError), a supervisor that is stopped or
// does not answer (ErrSupervisor, with what is wrong), or a cgroup path the
// protocol cannot carry fails the spawn, and the program never runs.
//
// Ledger records are written by group commit (one Update, one fsync, for
// every change queued meanwhile, see journal), and when SpawnOwned returns
// depends on what keeps the child in check:
//   - An owned child (not Survive) is registered with the death supervisor
//     before its program runs; that, not the ledger, is what makes it die
//     with the owner. So SpawnOwned only queues its record and returns: the
//     record may trail by one write in progress and the journal's gathering
//     after it (gatherTimes as long as that write took, at most maxGather). Close writes what
//     is queued before it returns. If the owner dies before the write, the
//     child dies too, and the missing record names nothing alive. While the
//     ledger cannot be written (a full disk), records wait in memory and
//     are written when it can (see journal); past the journal's bound, the
//     spawn waits for its record, and fails with the ledger's error.
//   - A Survive child outlives the owner, and the ledger is how the next
//     owner finds and re-adopts it: SpawnOwned returns only once its record
//     is on disk, and fails (killing the child, and removing its cgroup) if
//     the write fails.
//
// Every later change of a record (Release, ReleaseOnceEmpty, the removal
// when the group is empty) is queued behind the record itself, so it is
// never overtaken by a record that still trails: an entry removed before it
// was written is not written afterwards.
func (o *Owner) SpawnOwned(ctx context.Context, spec Spec) (*Child, error) {
	startDefault()
	if spec.Ownership == "" {
		spec.Ownership = units.Owned
	}
	path, err := checkSpec(spec)
	if err != nil {
		return nil, fmt.Errorf("spawn %s: %w", spec.Unit, err)
	}
	sp, err := o.reserve(spec, path)
	if err != nil {
		return nil, err
	}
	defer sp.close()
	// The containment, by mode: a cgroup (registered before the child
	// starts into it, unless it is to survive), and a gate that holds the
	// program until it is registered or recorded.
	if o.tree != nil {
		err = sp.cgroup(ctx)
	} else if !spec.Survive {
		o.becomeSubreaper()
	}
	if err == nil && (o.tree == nil || spec.Survive || needsGate(spec.Exec)) {
		err = sp.gate()
	}
	if err == nil {
		err = sp.identity()
	}
	if err == nil {
		err = sp.start()
	}
	if err != nil {
		sp.undo()
		if err == ErrClosed { // as from reserve: the owner's own word, unwrapped
			return nil, err
		}
		return nil, fmt.Errorf("spawn %s: %w", spec.Unit, workdirHint(spec, err))
	}
	c, err := sp.commit(ctx)
	if err != nil {
		sp.fail(c)
		return nil, fmt.Errorf("spawn %s: %w", spec.Unit, err)
	}
	if !spec.Survive && o.mode == ModePGroup {
		o.poke() // the janitor arms its look for escapees (scanDueLocked)
	}
	// The waiter ends when the leader is reaped. Close joins it (through
	// r.waited) while the group is registered; a Survive or released leader
	// outlives the owner, and so may its waiter, until the process exits.
	go o.wait(sp.cmd, c, sp.onExit())
	return c, nil
}

// checkSpec refuses a spec that cannot run, before anything is made, and
// returns the program's path.
func checkSpec(spec Spec) (string, error) {
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return "", errors.New("empty argv")
	}
	if _, err := units.ParseOwnership(string(spec.Ownership)); err != nil {
		return "", err // the ledger could not hold it
	}
	path, err := lookPath(spec.Argv[0], spec.Dir, spec.Env)
	if err != nil {
		return "", err
	}
	// A missing working directory makes the exec fail with the chdir's
	// errno reported against the program ("fork/exec /usr/bin/x: no such
	// file or directory"), which blames the wrong path: check it first.
	if spec.Dir != "" {
		if st, err := os.Stat(spec.Dir); err != nil {
			return "", fmt.Errorf("working directory: %w", err)
		} else if !st.IsDir() {
			return "", fmt.Errorf("working directory %s is not a directory", spec.Dir)
		}
	}
	return path, nil
}

// workdirHint says what a start that failed with EACCES most likely met,
// for a child that runs as another user in a working directory: the
// chdir into it fails in the child, and its error names the program
// ("fork/exec /bin/sh: permission denied").
func workdirHint(spec Spec, err error) error {
	if spec.Dir == "" || !spec.Exec.SetsIdentity() || !errors.Is(err, syscall.EACCES) {
		return err
	}
	who := "user " + spec.Exec.User
	switch {
	case spec.Exec.User != "":
	case spec.Exec.Group != "":
		who = "group " + spec.Exec.Group
	default:
		who = "supplementary groups"
	}
	return fmt.Errorf("working directory %s: the unit's %s may not be able to enter it; give the unit a workdir: that it may enter (%w)", spec.Dir, who, err)
}

// spawning is one SpawnOwned call between its steps: what the steps made,
// so that undo (before the start) and fail (after it) take back exactly
// that.
type spawning struct {
	o     *Owner
	spec  Spec
	r     *reg
	cmd   *exec.Cmd
	attr  *syscall.SysProcAttr
	cgFD  *os.File // the cgroup's directory, for CLONE_INTO_CGROUP
	gateR *os.File // the gate's read end, the child's fd 3
	gateW *os.File // the gate's write end: "go" runs the program, EOF ends it
}

// reserve takes a registration id and a spawn key for spec, and builds its
// command; a closed owner, or (for a child registered with it) a stopped
// supervisor, fails the spawn before anything is made.
func (o *Owner) reserve(spec Spec, path string) (*spawning, error) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil, ErrClosed
	}
	if !spec.Survive {
		if err := o.availableLocked(); err != nil {
			o.mu.Unlock()
			return nil, fmt.Errorf("spawn %s: %w", spec.Unit, err)
		}
	}
	n := o.nextLocked()
	o.mu.Unlock()
	r := &reg{id: fmt.Sprintf("s%d", n), key: fmt.Sprintf("%s_%d", o.name, spawnSeq.Add(1)), spawned: true, g: Group{Unit: spec.Unit},
		files: fileIDs(spec.Stdin, spec.Stdout, spec.Stderr)}
	cmd := exec.Command(path, spec.Argv[1:]...)
	cmd.Args[0] = spec.Argv[0]
	cmd.Env = o.tag(spec, r.key)
	cmd.Dir = spec.Dir
	if spec.Stdin != nil {
		cmd.Stdin = spec.Stdin
	}
	if spec.Stdout != nil {
		cmd.Stdout = spec.Stdout
	}
	if spec.Stderr != nil {
		cmd.Stderr = spec.Stderr
	}
	// detached-spawn: ok — the supervisor's spawn: every child leads its own
	// group so that the group can be registered and killed as one, in a
	// session of its own (as systemd starts services), so that none of its
	// processes can join another spawn's group or the owner's (setpgid
	// stays within a session). A Foreground child stays in the owner's
	// session: the terminal's foreground group must be in its session; and
	// so does the command of a run owner (hermesctl run), as a shell's
	// command does, so that it keeps the caller's terminal (/dev/tty: a
	// password prompt) whether or not stdin is that terminal.
	own := !spec.Foreground && o.opts.Role != units.RoleRun
	attr := &syscall.SysProcAttr{Setsid: own, Setpgid: !own, Foreground: spec.Foreground}
	cmd.SysProcAttr = attr
	return &spawning{o: o, spec: spec, r: r, cmd: cmd, attr: attr}, nil
}

// cgroup makes the child's cgroup (under the owner's subtree, or the kept
// one for a survivor) and has the child start into it; an owned child's
// cgroup alone (pgid 0 until the leader exists) is registered and accepted
// before the child starts.
func (sp *spawning) cgroup(ctx context.Context) error {
	o, spec := sp.o, sp.spec
	parent := o.tree.root
	if spec.Survive {
		parent = filepath.Join(o.tree.base, keptDir)
	}
	dir := filepath.Join(parent, cgName(spec.Unit, sp.r.key))
	if err := mkdirIn(parent, dir); err != nil {
		return fmt.Errorf("create cgroup: %w", err)
	}
	sp.r.g.Cgroup = dir
	if err := cgroupLimits(o.tree.base, parent, dir, spec.Exec.Cgroup, func(format string, args ...any) {
		o.opts.Logf("supervisor: unit %s: "+format, append([]any{spec.Unit}, args...)...)
	}); err != nil {
		return err
	}
	fd, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open cgroup: %w", err)
	}
	sp.cgFD = fd
	if err := intoCgroup(sp.attr, int(fd.Fd())); err != nil {
		return err
	}
	if spec.Survive {
		return nil
	}
	return sp.register(ctx)
}

// register registers the group with the death supervisor and waits for
// its answer.
func (sp *spawning) register(ctx context.Context) error {
	o := sp.o
	o.mu.Lock()
	s, err := o.registerLocked(sp.r)
	o.mu.Unlock()
	if err != nil {
		return err
	}
	return o.confirm(ctx, sp.r, s)
}

// becomeSubreaper makes the owner the child subreaper, once: escapees of
// its groups are re-parented to it, where the janitor finds them.
func (o *Owner) becomeSubreaper() {
	o.subreaper.Do(func() {
		// The portable backend does without, as on darwin: orphans go
		// to init, and scan finds escapees by ancestry and tags.
		if !o.portable {
			if err := proc.BecomeSubreaper(); err != nil {
				o.opts.Logf("supervisor: child subreaper: %v (escapees are found by ancestry and tags)", err)
			} else {
				o.reaping.Store(true)
			}
		}
		// The janitor scans at each child exit and re-parented zombie,
		// not on a timer. Stopped by Close.
		signal.Notify(o.sigchld, syscall.SIGCHLD)
	})
}

// gate has the child run the gate script first: it runs the program only
// once it reads "go". An owned child in cgroup mode needs none: its
// cgroup is registered before it starts. A Survive child always has one:
// nothing kills it when the owner dies, and the ledger record is how the
// next owner finds it, so it must never run unrecorded (an owner killed
// between the start and the record would leave a survivor no one knows,
// and the next owner would start a duplicate).
func (sp *spawning) gate() error {
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("gate: %w", err)
	}
	sp.gateR, sp.gateW = r, w
	path := sp.cmd.Path
	sp.cmd.Path = Shell
	sp.cmd.Args = append([]string{Shell, "-c", gate, sp.spec.Argv[0], path}, sp.spec.Argv[1:]...)
	sp.cmd.ExtraFiles = []*os.File{r}
	return nil
}

// start starts the leader, unless the owner was closed meanwhile.
func (sp *spawning) start() error {
	o := sp.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return ErrClosed
	}
	if err := sp.cmd.Start(); err != nil {
		return err
	}
	o.leaders[sp.cmd.Process.Pid] = true
	return nil
}

// commit makes the started child a group: its leader set, registered
// with the supervisor (an owned child), recorded in the ledger, and the
// gate opened. The Child it returns is valid for fail when err is set.
func (sp *spawning) commit(ctx context.Context) (*Child, error) {
	o, spec, r := sp.o, sp.spec, sp.r
	pid := sp.cmd.Process.Pid
	id, err := proc.Read(pid) // our unreaped child: its stat stays readable even if it exited
	if err != nil {
		id = proc.Identity{PID: pid}
	}
	// Under mu: in cgroup mode r is registered already, and a supervisor
	// restart replays it (startLocked) from another goroutine.
	o.mu.Lock()
	o.setGroupLocked(r, pid, id)
	if sp.attr.Setsid {
		r.session = pid // it leads its session: see reserve
	}
	o.mu.Unlock()
	c := &Child{Group: r.g, Key: r.key, done: make(chan struct{})}
	if h := o.hooks; h != nil && h.afterSpawn != nil {
		h.afterSpawn(pid)
	}
	if !spec.Survive {
		o.mu.Lock()
		r.waited = c.done
		o.mu.Unlock()
		// In cgroup mode the cgroup is what the supervisor kills, and it
		// was registered (and accepted) before the child started into it:
		// the leader's pgid and identity, set above, are carried by any
		// replay, and the script has no use for them. In pgroup mode this
		// is the registration, and the gate opens only once it is
		// accepted.
		if o.tree == nil {
			if err := sp.register(ctx); err != nil {
				return c, err
			}
			sp.mark()
		}
	}
	if err := sp.limit(); err != nil {
		return c, err
	}
	if err := sp.record(ctx, id); err != nil {
		return c, err
	}
	if sp.gateW != nil {
		if _, err := sp.gateW.Write([]byte("go\n")); err != nil {
			return c, fmt.Errorf("open gate: %w", err)
		}
	}
	return c, nil
}

// mark gives an owned child in pgroup mode its spawn's mark (see markOf)
// while it waits at the gate, so that every process it starts carries it;
// not with the portable backend, which does as darwin does (no marks
// there). A child that runs as another user is marked as its limits are
// set (asOwnerOf). A child that cannot be marked runs unmarked: it is
// found by its other evidence.
func (sp *spawning) mark() {
	o, r := sp.o, sp.r
	m, ok := markOf(r.key)
	if o.portable || !ok {
		return
	}
	pid := sp.cmd.Process.Pid
	if err := asOwnerOf(sp.attr.Credential, func() error { return setMark(pid, m) }); err != nil {
		o.opts.Logf("supervisor: %s: no mark (%v); its escapees are found by ancestry, tags and scans", sp.spec.Unit, err)
		return
	}
	o.mu.Lock()
	r.mark = m
	o.mu.Unlock()
}

// record queues (an owned child) or writes (a survivor) the child's
// ledger record; see SpawnOwned for when it waits.
func (sp *spawning) record(ctx context.Context, id proc.Identity) error {
	o, spec, r := sp.o, sp.spec, sp.r
	if o.jr == nil {
		return nil
	}
	e := ledger.Entry{
		Unit: spec.Unit, Leader: id, PGID: id.PID, Cgroup: r.g.Cgroup, Argv: ledger.Redact(spec.Argv),
		Owner: o.self, Role: o.opts.Role, Ownership: spec.Ownership, Reason: spec.Reason,
		Log: spec.LogPath, Spawned: time.Now().UTC(), Spawn: r.key,
	}
	add := func(es []ledger.Entry) []ledger.Entry { return append(es, e) }
	switch {
	case !spec.Survive && !o.jr.full():
		o.jr.post(add) // registered: it dies with us whether or not its record is written
		return nil
	case !spec.Survive:
		// The records that wait for a ledger that cannot be written
		// fill their bound: this one could not be kept, so the spawn
		// waits for it and fails, said, rather than run unrecorded.
		if err := o.jr.do(ctx, add); err != nil {
			return fmt.Errorf("record in ledger (%d records already wait for it): %w", maxBacklog, err)
		}
	default:
		if err := o.jr.do(ctx, add); err != nil {
			return fmt.Errorf("record in ledger: %w", err)
		}
	}
	return nil
}

// onExit is what the leader's waiter runs once it is reaped: an owned
// group's registration learns its leader is gone (the janitor then looks
// at the group); a survivor's kept cgroup is removed if the exit left it
// empty (otherwise whoever sees it empty later does: Stop, or the next
// owner's start).
func (sp *spawning) onExit() func() {
	o, r := sp.o, sp.r
	switch {
	case !sp.spec.Survive:
		return func() {
			o.mu.Lock()
			o.pendLocked(r, true)
			o.mu.Unlock()
			o.poke()
		}
	case r.g.Cgroup != "":
		dir := r.g.Cgroup
		return func() { removeEmpty(dir) }
	}
	return nil
}

// abort stops what the steps made from running: the gate sees EOF and
// exits without running the program, the cgroup is killed, and the
// registration (if any) is taken back.
func (sp *spawning) abort() {
	if sp.gateW != nil {
		sp.gateW.Close()
	}
	if sp.r.g.Cgroup != "" {
		killCgroup(sp.r.g.Cgroup)
	}
	sp.o.mu.Lock()
	sp.o.unregisterLocked(sp.r)
	sp.o.mu.Unlock()
}

// undo takes back a spawn that failed before its child started.
func (sp *spawning) undo() {
	sp.abort()
	if sp.r.g.Cgroup != "" {
		os.Remove(sp.r.g.Cgroup)
	}
}

// fail takes back a spawn once its child started: the child is killed
// (abort), reaped, and its cgroup removed once empty, a kept one
// included, so that no empty cgroup is left behind.
func (sp *spawning) fail(c *Child) {
	sp.abort()
	sp.o.wait(sp.cmd, c, nil)
	if sp.r.g.Cgroup != "" {
		removeWhenEmpty(sp.r.g.Cgroup, sp.o.opts.Grace)
	}
}

// close closes the descriptors the spawn held for the child, once it has
// them (or will not start).
func (sp *spawning) close() {
	for _, f := range []*os.File{sp.cgFD, sp.gateR, sp.gateW} {
		if f != nil {
			f.Close()
		}
	}
}

// wait reaps the leader, fills c, and runs onExit. The wait parks on a
// pidfd (reapChild): a waiter per child costs a goroutine, not an OS thread.
func (o *Owner) wait(cmd *exec.Cmd, c *Child, onExit func()) {
	pid := cmd.Process.Pid
	// cmd.Process is never waited on: its own pidfd handle is closed when
	// it is garbage (Release would race with readers of its Pid).
	ws, err := reapChild(pid)
	o.mu.Lock()
	delete(o.leaders, pid)
	o.mu.Unlock()
	switch {
	case err != nil:
		c.err = fmt.Errorf("wait for %s leader %d: %w", c.Unit, pid, err)
	case ws.Signaled():
		c.err = &ExitError{Code: -1, Signal: ws.Signal()}
	case ws.ExitStatus() != 0:
		c.err = &ExitError{Code: ws.ExitStatus()}
	}
	if onExit != nil {
		onExit()
	}
	c.exit()
}

// tag returns the child's environment: spec.Env without inherited tags,
// plus this spawn's. EnvState names the ledger's state directory (no tag
// without a ledger): a rebuild of another directory's ledger never takes
// the child (see ledger.Rebuild), so no gateway of another directory
// re-adopts or stops it.
func (o *Owner) tag(spec Spec, key string) []string {
	env := make([]string, 0, len(spec.Env)+5)
	for _, kv := range spec.Env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case ledger.EnvUnit, ledger.EnvOwner, ledger.EnvSpawn, ledger.EnvOwnership, ledger.EnvState, ledger.EnvRole:
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		ledger.EnvUnit+"="+spec.Unit,
		ledger.EnvOwner+"="+o.self.String(),
		ledger.EnvSpawn+"="+key,
		ledger.EnvOwnership+"="+string(spec.Ownership))
	if o.opts.Role != "" {
		env = append(env, ledger.EnvRole+"="+string(o.opts.Role))
	}
	if o.led != nil {
		env = append(env, ledger.EnvState+"="+o.led.Dir())
	}
	return env
}

// cgName is a group's cgroup directory name: the unit name made safe, and
// the spawn key.
func cgName(unit, key string) string {
	b := []byte(unit)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	return string(b) + "." + key
}

// lookPath resolves name in the PATH of env (not of the owner). A name
// with a slash is a path; a relative one is relative to dir, the working
// directory the child starts in (as a shell's ./serve.sh after a cd), not
// to the owner's.
func lookPath(name, dir string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		if dir != "" && !filepath.IsAbs(name) {
			name = filepath.Join(dir, name)
		}
		return exec.LookPath(name)
	}
	pathEnv := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &NotFoundError{Name: name}
}

// ignoredAtStart are the signals this process was started with ignored
// among the two Go leaves ignored (every other gets Go's handler, which an
// exec resets): SIGHUP under nohup, SIGINT (and SIGQUIT) for a program a
// shell started with "&".
var ignoredAtStart = func() (sigs []os.Signal) {
	for _, s := range []os.Signal{syscall.SIGHUP, syscall.SIGINT} {
		if signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	return sigs
}()

// startDefault has the programs the owner spawns start with the signals in
// ignoredAtStart at their default action, as systemd starts services. An
// ignored signal stays ignored through exec, and a shell cannot even trap
// it: reload_signal: HUP, stop_signal: INT and `hermesctl kill -s HUP`
// would do nothing to a unit of an owner started from nohup or with "&".
// The owner catches them instead, with a handler that an exec resets, and
// drops them: it still does nothing on them.
var startDefault = sync.OnceFunc(func() {
	if len(ignoredAtStart) > 0 {
		signal.Notify(make(chan os.Signal, 1), ignoredAtStart...)
	}
})
