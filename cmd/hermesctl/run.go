package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// newRunCmd is "hermesctl run [--] CMD…": a non-gateway owner (role "run")
// that runs CMD as an owned child in the foreground. CMD gets hermesctl's
// own stdin, stdout and stderr; INT and TERM are forwarded to its group;
// hermesctl exits with CMD's status (128+signal when a signal killed it),
// and prints nothing of its own; a CMD that cannot be run is one line of
// error and the shell's status, 127 not found or 126 not executable.
// Whatever CMD started dies with hermesctl, by any death of hermesctl
// (kill -9 included), within the grace. When hermesd serves the provider
// proxy, CMD gets OPENAI_BASE_URL and OPENAI_API_KEY (the proxy token)
// unless its environment names an OPENAI_BASE_URL already (childProxyEnv).
// With --run-budget the run has a job's budget rules (runbudget.go): at
// 100 % CMD's group is stopped and hermesctl exits
// exitcode.HermesctlBudget with one line of error. hermesctl works for an
// owner (run_owner.go): the process that started it, or --owner PID; at
// the owner's death, by any death, CMD's tree ends as at hermesctl's own,
// and hermesctl exits with CMD's status; --no-owner keeps hermesctl alone
// as the owner.
func newRunCmd(g *globals) *cobra.Command {
	opts := &runOptions{clientOptions: clientOptions{g: g}, stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
	c := &cobra.Command{
		Use:   "run [--] CMD [ARG...]",
		Short: "Run a command as an owned child: its whole tree dies with hermesctl",
		Args:  cobra.MinimumNArgs(1),
	}
	f := c.Flags()
	f.SetInterspersed(false)
	f.StringVar(&opts.mode, "mode", "", "containment: cgroup or pgroup (default: cgroup where a writable cgroup v2 hierarchy exists)")
	f.DurationVar(&opts.grace, "grace", supervisor.DefaultGrace, "TERM→KILL grace for CMD's tree when hermesctl dies, or when --run-budget runs out")
	f.Float64Var(&opts.budget, "run-budget", 0, "a job's run budget, in `SECONDS`: a wrap-up notice at 80% ($HERMES_WRAPUP_FILE, --wrapup-signal, and through the proxy), CMD's group stopped at 100% (exit 124)")
	f.StringVar(&opts.wrapSig, "wrapup-signal", "", "`SIGNAL` sent to CMD at 80% of --run-budget, as a job's wrapup_signal (default: none)")
	f.IntVar(&opts.owner.pid, "owner", 0, "`PID` of the process, of your user, whose death by any death ends CMD's tree within --grace (default: the process that started hermesctl)")
	f.BoolVar(&opts.owner.none, "no-owner", false, "hermesctl alone owns CMD: its tree outlives the process that started hermesctl")
	return opts.command(c, func(ctx context.Context, args []string) error {
		opts.argv, opts.budgetGiven = args, f.Changed("run-budget")
		return runRun(ctx, opts)
	})
}

// runOptions are the flags and the command of run, and the standard
// streams CMD gets (hermesctl's own). hermesctl's notes go to errOut.
type runOptions struct {
	clientOptions
	argv                  []string      // CMD and its arguments
	mode                  string        // --mode
	grace                 time.Duration // --grace
	budget                float64       // --run-budget, in seconds
	budgetGiven           bool          // --run-budget was on the command line
	wrapSig               string        // --wrapup-signal
	owner                 ownerFlags    // --owner, --no-owner
	stdin, stdout, stderr *os.File      // CMD's; a terminal on stdin makes CMD its foreground group
}

// runRun checks the flags, then runs CMD as an owned child (runOwned).
func runRun(ctx context.Context, opts *runOptions) error {
	m, err := supervisor.ParseMode(opts.mode)
	if err != nil {
		return err
	}
	rb, err := parseRunBudget(opts.budget, opts.budgetGiven, opts.wrapSig)
	if err != nil {
		return err
	}
	return runOwned(ctx, opts, m, rb)
}

// runOwned runs CMD in the foreground until it exits, and returns its exit
// status as an exitError (run's doc above).
func runOwned(ctx context.Context, opts *runOptions, mode supervisor.Mode, rb runBudget) error {
	g, args, grace := opts.g, opts.argv, opts.grace
	wctx, unwatch := context.WithCancel(ctx)
	defer unwatch()
	ownerGone, err := watchOwner(wctx, opts.owner)
	if err != nil {
		return err
	}
	o, err := supervisor.New(supervisor.Options{StateDir: g.State, Role: units.RoleRun, Grace: grace, Mode: mode})
	if err != nil {
		return err
	}
	defer o.Close()
	// Subscribe before the start: a signal arriving during the spawn is
	// forwarded once the child exists.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	_, terr := unix.IoctlGetTermios(int(opts.stdin.Fd()), ioctlGetTermios)
	fg := terr == nil // stdin is a terminal: CMD becomes its foreground group
	if fg {
		// Taking the terminal back after CMD ends is done from the
		// background: SIGTTOU must not stop us.
		signal.Ignore(syscall.SIGTTOU)
	}
	// The child may use the provider proxy as a job does; with a budget
	// its clock starts now, and the run is registered with the proxy.
	env := os.Environ()
	var run *budgetedRun
	if rb.total > 0 {
		run = startRun(ctx, g, env, args, rb)
		defer run.end()
		env = append(env, run.env...)
	} else {
		env = append(env, childProxyEnv(ctx, g, env)...)
	}
	child, err := o.SpawnOwned(ctx, supervisor.Spec{
		Unit: "run", Argv: args, Env: env,
		Stdin: opts.stdin, Stdout: opts.stdout, Stderr: opts.stderr,
		Ownership: units.Owned, Foreground: fg,
	})
	if err != nil {
		if ee := execFailure(args[0], err); ee != nil {
			return ee
		}
		return err
	}
	// The budget's watcher ends when the leader has exited, or once its
	// stop has emptied the group.
	var stopped chan bool
	if run != nil {
		stopped = make(chan bool, 1)
		go func() {
			stopped <- watchBudget(run.budget, child.Done(), func() { run.wrapUp(child) }, func() {
				run.cut(opts.errOut)
				if err := o.Stop(ctx, child.Group, syscall.SIGTERM, grace); err != nil {
					fmt.Fprintln(opts.errOut, "hermesctl run: stopping at the run budget:", err)
				}
			})
		}()
	}
	for done := false; !done; {
		select {
		case s := <-sigs:
			if o.Empty(child.Group) {
				continue
			}
			syscall.Kill(-child.PGID, s.(syscall.Signal))
		case <-ownerGone:
			// The group's stop looks for escapees first (a daemon that
			// forked twice is ours, as subreaper, but not registered
			// until a scan sees it); then, as at hermesctl's own death,
			// the supervisor ends what is registered.
			fmt.Fprintf(opts.errOut, "hermesctl run: the owner of this run has exited; stopping %s (TERM, then KILL after %s)\n", args[0], grace)
			if err := o.Stop(ctx, child.Group, syscall.SIGTERM, grace); err != nil {
				fmt.Fprintln(opts.errOut, "hermesctl run:", err)
			}
			if err := o.Close(); err != nil {
				fmt.Fprintln(opts.errOut, "hermesctl run:", err)
			}
			<-child.Done()
			done = true
		case <-child.Done():
			done = true
		}
	}
	exceeded := stopped != nil && <-stopped
	if fg {
		unix.IoctlSetPointerInt(int(opts.stdin.Fd()), unix.TIOCSPGRP, syscall.Getpgrp())
	}
	if err := o.Close(); err != nil {
		fmt.Fprintln(opts.errOut, "hermesctl run:", err)
	}
	if exceeded {
		return run.exceeded(args, grace)
	}
	if ee, ok := errors.AsType[*supervisor.ExitError](child.Err()); ok {
		return &exitError{code: ee.Status()}
	}
	return child.Err()
}

// execFailure is the error of a program that could not be run, with the
// shell's exit status: exitcode.HermesctlNotFound (no such program: not in
// PATH, or no such file) or exitcode.HermesctlNotExecutable (found, but
// execve refused it: not executable, a directory, no #! line, a #!
// interpreter missing, text busy). It is nil for any other failure of the
// spawn (the supervisor, a cgroup), which stays exitcode.Failure.
func execFailure(name string, err error) *exitError {
	if nf, ok := errors.AsType[*supervisor.NotFoundError](err); ok {
		return &exitError{code: exitcode.HermesctlNotFound, err: fmt.Errorf("run: %w", nf)}
	}
	var errno syscall.Errno
	errors.As(err, &errno)
	// The program was named by its path: exec.LookPath stats it first.
	if xe, ok := errors.AsType[*exec.Error](err); ok {
		code := exitcode.HermesctlNotExecutable
		if errors.Is(xe.Err, fs.ErrNotExist) {
			code = exitcode.HermesctlNotFound
		}
		return &exitError{code: code, err: execError(name, errno, xe.Err, false)}
	}
	// os.StartProcess reports what failed in the child between fork and
	// exec as a *PathError whose Op is "fork/exec"; of those errnos, these
	// are execve's about the program itself.
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "fork/exec" {
		return nil
	}
	switch errno {
	case syscall.EACCES, syscall.ENOEXEC, syscall.ETXTBSY, syscall.ENOENT, syscall.ENOTDIR,
		syscall.EISDIR, syscall.ELOOP, syscall.ENAMETOOLONG, syscall.E2BIG:
		return &exitError{code: exitcode.HermesctlNotExecutable, err: execError(name, errno, pe.Err, true)}
	}
	return nil
}

// execError words a program that LookPath or (execed true) execve refused:
// its name as given, what was wrong, and for the usual causes what to do.
func execError(name string, errno syscall.Errno, err error, execed bool) error {
	if errno == 0 {
		return fmt.Errorf("run: %s: %w", name, err)
	}
	hint := ""
	switch errno {
	case syscall.EACCES:
		hint = " (make it executable with chmod +x, or run it with its interpreter: hermesctl run sh " + name + ")"
	case syscall.ENOEXEC:
		hint = " (a script needs a #! line, or run it with its interpreter: hermesctl run sh " + name + ")"
	case syscall.ENOENT:
		if execed { // the file was there: what is missing is its interpreter
			hint = " (the interpreter its #! line names is missing)"
		}
	}
	return fmt.Errorf("run: %s: %w%s", name, errno, hint)
}
