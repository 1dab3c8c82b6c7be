package supervisor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
	"golang.org/x/sys/unix"
)

// Spec says what to spawn.
type Spec struct {
	Unit      string
	Argv      []string // argv[0] looked up in the PATH of Env
	Env       []string // full environment; the ledger tags are added (and replace inherited ones)
	Dir       string
	Stdin     *os.File // nil = /dev/null
	Stdout    *os.File // nil = /dev/null; survivors must be given files, never pipes
	Stderr    *os.File // nil = /dev/null
	Ownership string   // recorded in the ledger and in EnvOwnership; "" = owned
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
}

// Child is a spawned group whose leader is our child.
type Child struct {
	Group
	Key  string // spawn key (the EnvSpawn tag of its processes)
	done chan struct{}
	err  error // set before done is closed
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
//     record may trail by at most one write in progress. Close writes what
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
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return nil, fmt.Errorf("spawn %s: empty argv", spec.Unit)
	}
	if spec.Ownership == "" {
		spec.Ownership = "owned"
	}
	path, err := lookPath(spec.Argv[0], spec.Env)
	if err != nil {
		return nil, fmt.Errorf("spawn %s: %w", spec.Unit, err)
	}
	// A missing working directory makes the exec fail with the chdir's
	// errno reported against the program ("fork/exec /usr/bin/x: no such
	// file or directory"), which blames the wrong path: check it first.
	if spec.Dir != "" {
		if st, err := os.Stat(spec.Dir); err != nil {
			return nil, fmt.Errorf("spawn %s: working directory: %w", spec.Unit, err)
		} else if !st.IsDir() {
			return nil, fmt.Errorf("spawn %s: working directory %s is not a directory", spec.Unit, spec.Dir)
		}
	}
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil, ErrClosed
	}
	if !spec.Survive {
		// A stopped supervisor fails the spawn before anything is made.
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
	// group so that the group can be registered and killed as one.
	attr := &syscall.SysProcAttr{Setpgid: true, Foreground: spec.Foreground}
	cmd.SysProcAttr = attr

	var gateW *os.File
	var cgFD *os.File
	abort := func() {}
	if o.tree != nil {
		parent := o.tree.root
		if spec.Survive {
			parent = filepath.Join(o.tree.base, keptDir)
		}
		dir := filepath.Join(parent, cgName(spec.Unit, r.key))
		if err := mkdirIn(parent, dir); err != nil {
			return nil, fmt.Errorf("spawn %s: create cgroup: %w", spec.Unit, err)
		}
		r.g.Cgroup = dir
		if cgFD, err = os.Open(dir); err != nil {
			os.Remove(dir)
			return nil, fmt.Errorf("spawn %s: open cgroup: %w", spec.Unit, err)
		}
		defer cgFD.Close()
		attr.UseCgroupFD, attr.CgroupFD = true, int(cgFD.Fd())
		if !spec.Survive {
			// The cgroup alone, pgid 0 until the leader exists; accepted
			// before the child starts into it.
			o.mu.Lock()
			s, err := o.registerLocked(r)
			o.mu.Unlock()
			if err == nil {
				err = o.confirm(ctx, r, s)
			}
			if err != nil {
				o.mu.Lock()
				o.unregisterLocked(r)
				o.mu.Unlock()
				os.Remove(dir)
				return nil, fmt.Errorf("spawn %s: %w", spec.Unit, err)
			}
		}
		abort = func() {
			killCgroup(dir)
			o.mu.Lock()
			o.unregisterLocked(r)
			o.mu.Unlock()
		}
	} else if !spec.Survive {
		o.subreaper.Do(func() {
			if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
				o.opts.Logf("supervisor: child subreaper: %v (escapees may be missed)", err)
			}
			// The janitor scans at each child exit and re-parented zombie,
			// not on a timer. Stopped by Close.
			signal.Notify(o.sigchld, syscall.SIGCHLD)
		})
	}
	// The gate. An owned child in cgroup mode needs none: its cgroup is
	// registered before it starts. A Survive child always has one: nothing
	// kills it when the owner dies, and the ledger record is how the next
	// owner finds it, so it must never run unrecorded (an owner killed
	// between the start and the record would leave a survivor no one
	// knows, and the next owner would start a duplicate).
	if o.tree == nil || spec.Survive {
		var gateR *os.File
		if gateR, gateW, err = os.Pipe(); err != nil {
			if r.g.Cgroup != "" {
				os.Remove(r.g.Cgroup)
			}
			return nil, fmt.Errorf("spawn %s: gate: %w", spec.Unit, err)
		}
		defer gateR.Close()
		defer gateW.Close()
		cmd.Path = Shell
		cmd.Args = append([]string{Shell, "-c", gate, spec.Argv[0], path}, spec.Argv[1:]...)
		cmd.ExtraFiles = []*os.File{gateR}
		if o.tree == nil {
			abort = func() {
				gateW.Close() // the gate sees EOF and exits without running the program
				o.mu.Lock()
				o.unregisterLocked(r)
				o.mu.Unlock()
			}
		}
	}

	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		abort()
		return nil, ErrClosed
	}
	err = cmd.Start()
	if err == nil {
		o.leaders[cmd.Process.Pid] = true
	}
	o.mu.Unlock()
	if err != nil {
		abort()
		if r.g.Cgroup != "" {
			os.Remove(r.g.Cgroup)
		}
		return nil, fmt.Errorf("spawn %s: %w", spec.Unit, err)
	}
	pid := cmd.Process.Pid
	id, err := proc.Read(pid) // our unreaped child: its stat stays readable even if it exited
	if err != nil {
		id = proc.Identity{PID: pid}
	}
	// Under mu: in cgroup mode r is registered already, and a supervisor
	// restart replays it (startLocked) from another goroutine.
	o.mu.Lock()
	r.g.PGID, r.g.Leader = pid, id
	o.mu.Unlock()
	c := &Child{Group: r.g, Key: r.key, done: make(chan struct{})}
	// fail undoes the spawn once the child started: it is killed (abort:
	// cgroup.kill, or the gate's EOF), reaped, and its cgroup removed once
	// empty, a kept one included, so that no empty cgroup is left behind.
	fail := func(err error) (*Child, error) {
		abort()
		o.wait(cmd, c, nil)
		if r.g.Cgroup != "" {
			removeWhenEmpty(r.g.Cgroup, o.opts.Grace)
		}
		return nil, err
	}
	if o.afterSpawn != nil {
		o.afterSpawn(pid)
	}
	if !spec.Survive {
		o.mu.Lock()
		r.waited = c.done
		s, err := o.registerLocked(r)
		o.mu.Unlock()
		if err == nil {
			err = o.confirm(ctx, r, s)
		}
		if err != nil {
			return fail(fmt.Errorf("spawn %s: %w", spec.Unit, err))
		}
	}
	if o.jr != nil {
		e := ledger.Entry{
			Unit: spec.Unit, Leader: id, PGID: pid, Cgroup: r.g.Cgroup, Argv: ledger.Redact(spec.Argv),
			Owner: o.self, Role: o.opts.Role, Ownership: spec.Ownership, Reason: spec.Reason,
			Log: spec.LogPath, Spawned: time.Now().UTC(), Spawn: r.key,
		}
		add := func(es []ledger.Entry) []ledger.Entry { return append(es, e) }
		switch {
		case !spec.Survive && !o.jr.full():
			o.jr.post(add) // registered: it dies with us whether or not its record is written
		case !spec.Survive:
			// The records that wait for a ledger that cannot be written
			// fill their bound: this one could not be kept, so the spawn
			// waits for it and fails, said, rather than run unrecorded.
			if err := o.jr.do(ctx, add); err != nil {
				return fail(fmt.Errorf("spawn %s: record in ledger (%d records already wait for it): %w", spec.Unit, maxBacklog, err))
			}
		default:
			if err := o.jr.do(ctx, add); err != nil {
				return fail(fmt.Errorf("spawn %s: record in ledger: %w", spec.Unit, err))
			}
		}
	}
	if gateW != nil {
		if _, err := gateW.Write([]byte("go\n")); err != nil {
			return fail(fmt.Errorf("spawn %s: open gate: %w", spec.Unit, err))
		}
	}
	var onExit func()
	switch {
	case !spec.Survive:
		onExit = func() {
			o.mu.Lock()
			r.leaderGone = true
			o.mu.Unlock()
			o.poke()
		}
	case r.g.Cgroup != "":
		// Nothing registers a survivor: its waiter removes the kept
		// cgroup if the leader's exit left it empty. Otherwise whoever
		// sees it empty later does (Stop, or the next owner's start).
		dir := r.g.Cgroup
		onExit = func() { removeEmpty(dir) }
	}
	if !spec.Survive && o.mode == ModePGroup {
		o.poke() // the janitor arms its look for escapees (scanDueLocked)
	}
	// The waiter ends when the leader is reaped. Close joins it (through
	// r.waited) while the group is registered; a Survive or released leader
	// outlives the owner, and so may its waiter, until the process exits.
	go o.wait(cmd, c, onExit)
	return c, nil
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
	close(c.done)
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
		ledger.EnvOwnership+"="+spec.Ownership)
	if o.opts.Role != "" {
		env = append(env, ledger.EnvRole+"="+o.opts.Role)
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

// lookPath resolves name in the PATH of env (not of the owner).
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
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
