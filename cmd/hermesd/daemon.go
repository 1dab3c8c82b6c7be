package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/events"
	"github.com/hermes-units/hermes/internal/boolflag"
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/internal/holds"
	"github.com/hermes-units/hermes/internal/logfile"
	"github.com/hermes-units/hermes/internal/notify"
	"github.com/hermes-units/hermes/internal/paths"
	"github.com/hermes-units/hermes/internal/safefile"
	"github.com/hermes-units/hermes/internal/version"
	"github.com/hermes-units/hermes/internal/wallclock"
	"github.com/hermes-units/hermes/internal/watch"
	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/reconciler"
	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"
)

// exitError carries an exit code out of run; main prints err once.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func exit(code int, err error) error { return &exitError{code, err} }

// errVersion: --version was asked for; run prints the version and exits 0.
var errVersion = errors.New("version asked for")

// buildVersion is this binary's build, as the control API reports it.
func buildVersion() control.VersionInfo { return control.VersionInfo(version.Read()) }

// ErrLocked reports a state directory held by another hermesd.
var ErrLocked = errors.New("state directory is locked by another hermesd")

// config is hermesd's resolved settings.
type config struct {
	paths.Paths
	role     units.Role
	insecure bool
	mode     supervisor.Mode // "" = automatic
	stamps   bool            // stampEnv: owned units' output through hermesd, stamped
}

// usage is what hermesd --help says before its flags.
const usage = `hermesd is the hermes units daemon: it keeps the units of a directory
running (restarts, readiness probes, schedules), re-adopts the survivors of
a previous gateway, kills every process it owns when it dies (kill -9
included, through its death supervisor), and serves the control socket
that hermesctl steers it through, and the provider proxy when configured.
It runs in the foreground and logs to stderr; TERM or INT stop it cleanly.

Usage:
  hermesd [flags]

Flags (the paths and --role also as HERMES_* variables and keys of hermes.yaml;
flag > env > file > default):
`

func parseFlags(args []string) (config, error) {
	fs := pflag.NewFlagSet("hermesd", pflag.ContinueOnError)
	paths.AddFlags(fs)
	fs.String(paths.KeyRole, string(units.RoleGateway), "owner role: gateway (survivors are re-adopted) or worker (env HERMES_ROLE, config key role)")
	insecure := fs.Bool("insecure-units", false, "skip the ownership and permission checks of unit files")
	showVersion := fs.Bool("version", false, "print hermesd's version (module version, VCS revision) and exit")
	addModeFlag(fs)
	help := fs.BoolP("help", "h", false, "show this help")
	boolflag.Plain(fs)
	fs.Usage = func() { fmt.Fprint(fs.Output(), usage, fs.FlagUsages()) }
	if err := fs.Parse(args); err != nil {
		return config{}, exit(exitcode.Usage, err)
	}
	if *help {
		fs.SetOutput(os.Stdout) // asked for: the help is the output
		fs.Usage()
		return config{}, pflag.ErrHelp
	}
	if *showVersion {
		return config{}, errVersion
	}
	if fs.NArg() > 0 {
		return config{}, exit(exitcode.Usage, fmt.Errorf("unexpected arguments %q; hermesd takes flags only", fs.Args()))
	}
	res, err := paths.Resolve(fs)
	if err != nil {
		return config{}, exit(exitcode.Usage, err)
	}
	if res.Role == "" {
		res.Role = string(units.RoleGateway)
	}
	role, err := reconciler.ParseRole(res.Role)
	if err != nil {
		return config{}, exit(exitcode.Usage, err)
	}
	mode, err := resolveMode(fs)
	if err != nil {
		return config{}, exit(exitcode.Usage, err)
	}
	stamps, err := stampOutput()
	if err != nil {
		return config{}, exit(exitcode.Usage, err)
	}
	return config{Paths: res.Paths, role: role, insecure: *insecure, mode: mode, stamps: stamps}, nil
}

func run(args []string) error {
	if len(args) > 0 && args[0] == relayArg {
		return runRelay(args[1:])
	}
	if asInit() {
		return runInit(args)
	}
	// Before anything is opened or started: what hermesd inherited must
	// not pass on to the units and the death supervisor.
	if err := cloexecInherited(); err != nil {
		return exit(exitcode.Failure, err)
	}
	cfg, err := parseFlags(args)
	if errors.Is(err, pflag.ErrHelp) {
		return nil
	}
	if errors.Is(err, errVersion) {
		fmt.Println("hermesd", version.Read())
		return nil
	}
	if err != nil {
		return err
	}
	setGCPercent()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return serve(ctx, cfg, log)
}

// stateLock is hermesd's hold on its state directory: the flock on
// hermesd.lock, and the directory's name (holdStateName), which outlives
// the directory's files.
type stateLock struct {
	f    *os.File
	name io.Closer
}

func (l *stateLock) Close() error {
	return errors.Join(l.name.Close(), l.f.Close())
}

// lockState makes the state directory (mode 0700) if need be, refuses
// one that is not safe (checkState: exit 2), then takes
// <state>/hermesd.lock with flock and the directory's name
// (holdStateName), and writes our pid in the lock file once both are
// held. A link planted at the lock's name is refused, never followed. The
// descriptors are close-on-exec, so no unit inherits the lock.
func lockState(state string) (*stateLock, error) {
	if err := os.MkdirAll(state, 0o700); err != nil {
		return nil, fmt.Errorf("create state directory: %w", err)
	}
	if err := checkState(state); err != nil {
		return nil, err
	}
	path := filepath.Join(state, "hermesd.lock")
	f, err := safefile.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		holder := strings.TrimSpace(string(b))
		if holder == "" {
			holder = "unknown"
		}
		return nil, fmt.Errorf("%w: %s is held by pid %s; stop that hermesd or pass another --state", ErrLocked, path, holder)
	}
	name, err := holdStateName(state)
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &stateLock{f: f, name: name}, nil
}

// serve runs hermesd until ctx ends and the clean stop is done: it takes
// the state directory, opens the parts in order (observer, supervisor,
// proxy, sockets and watcher, reconciler), then runs them (instance.run).
// Each part opened is closed on the way out.
func serve(ctx context.Context, cfg config, log *slog.Logger) error {
	// First, before anything is opened: the descriptor limit is the hard
	// one; fds warns on each load when it cannot serve what is declared.
	soft, hard, ferr := raiseNoFile()
	if ferr != nil {
		log.Warn("descriptor limit not raised", "err", ferr)
	}
	lock, err := lockState(cfg.State)
	switch {
	case errors.Is(err, ErrLocked):
		return exit(exitcode.HermesdLocked, err)
	case errors.Is(err, ErrUnsafeState):
		return exit(exitcode.Usage, err)
	case err != nil:
		return exit(exitcode.Failure, err)
	}
	defer lock.Close()
	if err := os.MkdirAll(cfg.Units, 0o700); err != nil {
		return exit(exitcode.Usage, fmt.Errorf("units directory: %w", err))
	}
	d := &instance{cfg: cfg, log: log}
	if d.self, err = proc.Self(); err != nil {
		return exit(exitcode.Failure, err)
	}
	if d.led, err = ledger.Open(cfg.State); err != nil {
		return exit(exitcode.Failure, err)
	}
	// d.rec is set below, before anything reads status.
	d.obs, err = startObserver(ctx, cfg, log, func(ctx context.Context) (control.Status, error) { return d.rec.Status(ctx) })
	if err != nil {
		return err
	}
	defer d.obs.close()
	d.led.ObserveWrites(d.obs.metrics.LedgerWrite)
	if err := checkShell(supervisor.Shell); err != nil {
		return exit(exitcode.Failure, err)
	}
	if d.owner, err = d.newOwner(); err != nil {
		return exit(exitcode.Failure, err)
	}
	defer d.owner.Close()
	adviseMode(log, cfg.mode, d.owner.Status().Mode)

	d.read = &units.Cache{}
	if d.px, err = startProxy(ctx, cfg, d.read, log, d.obs); err != nil {
		return err
	}
	defer d.px.close()
	if d.probes, err = listenProbes(ctx, cfg, log); err != nil {
		return err
	}
	if d.probes != nil {
		defer d.probes.Close()
	}
	d.fds = newFDWatch(soft, hard, d.px != nil, log)

	if err := d.listen(); err != nil {
		return err
	}
	if err := d.newReconciler(); err != nil {
		d.ln.Close()
		d.closeNotify()
		d.w.Close()
		return exit(exitcode.Failure, err)
	}
	log.Info("hermesd starting", "pid", os.Getpid(), "role", cfg.role, "units", cfg.Units, "state", cfg.State, "socket", cfg.Socket, "mode", d.owner.Status().Mode)
	return d.run(ctx)
}

// instance is the parts of one hermesd that serve opens, one step at a time
// and in field order, for the steps after to wire and run. Each field is
// set once, on serve's goroutine, before the step that reads it.
type instance struct {
	cfg        config
	log        *slog.Logger
	self       proc.Identity
	led        *ledger.Ledger
	obs        *observer
	owner      *supervisor.Owner
	read       *units.Cache  // the unit files as read, startProxy's read first: each load reads again only those changed
	px         *gatewayProxy // nil: no provider, the proxy is off
	probes     net.Listener  // probes.listen; nil: the probes are off
	fds        *fdWatch
	notifyPath string
	ns         *notify.Server  // the shared socket; nil in the per-unit mode or where the platform has none
	nss        *notify.Sockets // the per-unit sockets; nil in the shared mode
	w          *watch.Watcher
	ln         *control.Listener
	logs       *logfile.Logs
	rec        *reconciler.Reconciler
	started    chan struct{} // closed by the reconciler's OnReady (once): the start burst is over
}

// newOwner starts the supervisor of the units' processes, in cfg's role
// and mode, reporting to the log and the observer.
func (d *instance) newOwner() (*supervisor.Owner, error) {
	return supervisor.New(supervisor.Options{
		StateDir: d.cfg.State, Role: d.cfg.role, Mode: d.cfg.mode,
		Logf:          func(format string, args ...any) { d.log.Info(fmt.Sprintf(format, args...), "part", "supervisor") },
		OnRestart:     d.obs.supervisorRestart,
		OnLedgerWrite: d.obs.metrics.LedgerWrite,
	})
}

// supervisorPID is the death supervisor's pid, 0 when none runs.
func (d *instance) supervisorPID() int { return d.owner.Status().PID }

// controlLogf logs the control socket's and API's warnings.
func (d *instance) controlLogf(f string, a ...any) {
	d.log.Warn(fmt.Sprintf(f, a...), "part", "control")
}

// listen opens the notify socket, the units watcher and the control
// socket, in that order; on an error it closes those it opened. A control
// socket in use, unsafe or at too long a path is exitcode.HermesdSocket.
func (d *instance) listen() error {
	if err := d.listenNotify(); err != nil {
		return err
	}
	w, err := watch.New(watch.Options{Dir: d.cfg.Units, Config: d.cfg.Config})
	if err != nil {
		d.closeNotify()
		return exit(exitcode.Failure, err)
	}
	ln, err := control.Listen(d.cfg.Socket, d.controlLogf)
	if err != nil {
		d.closeNotify()
		w.Close()
		if errors.Is(err, control.ErrInUse) || errors.Is(err, control.ErrUnsafe) || errors.Is(err, control.ErrPathTooLong) {
			return exit(exitcode.HermesdSocket, err)
		}
		return exit(exitcode.Failure, err)
	}
	d.w, d.ln = w, ln
	return nil
}

// listenNotify opens the units' notify sockets in the mode that
// notify.ModeEnv in hermesd's environment chooses (this is the one place
// it is chosen; unset, the platform's default): one socket for every unit,
// <state>/notify.sock, or one per unit run in <state>/notify. A state
// directory too long for the per-unit sockets' paths is an error that says
// so. Where the shared socket cannot tell senders apart, hermesd runs
// without one and says so.
func (d *instance) listenNotify() error {
	mode, err := notify.ParseMode(os.Getenv(notify.ModeEnv))
	if err != nil {
		return exit(exitcode.Usage, err)
	}
	if mode == notify.ModeUnit {
		if d.nss, err = notify.ListenDir(filepath.Join(d.cfg.State, "notify")); err != nil {
			return exit(exitcode.Failure, err)
		}
		return nil
	}
	d.notifyPath = filepath.Join(d.cfg.State, "notify.sock")
	d.ns, err = notify.Listen(d.notifyPath)
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		// No sender credentials on this platform's datagrams: the units get
		// no NOTIFY_SOCKET, and readiness by sd_notify cannot be had.
		d.log.Warn("no shared notify socket: units cannot use sd_notify (readiness, watchdog); unset "+notify.ModeEnv+" for per-unit sockets", "err", err)
		d.notifyPath, d.ns = "", nil
	case err != nil:
		return exit(exitcode.Failure, err)
	}
	return nil
}

// closeNotify closes the notify sockets, when there are.
func (d *instance) closeNotify() {
	if d.ns != nil {
		d.ns.Close()
	}
	if d.nss != nil {
		d.nss.Close()
	}
}

// notifySockets is the per-unit sockets for reconciler.Options: nil (not
// a nil *notify.Sockets) in the shared mode.
func (d *instance) notifySockets() reconciler.NotifySockets {
	if d.nss == nil {
		return nil
	}
	return d.nss
}

// newReconciler builds the unit logs and the reconciler over the parts
// opened; hermesd's start time is now.
func (d *instance) newReconciler() error {
	cfg, log, owner, px := d.cfg, d.log, d.owner, d.px
	started := time.Now()
	d.started = make(chan struct{})
	load := newLoader(cfg, d.read, log, both(loadHook(px, log), d.fds.check), d.w.Changed)
	d.logs = logfile.NewLogs(func(path string, err error) {
		log.Warn("unit log", "path", path, "err", err)
	})
	rec, err := reconciler.New(reconciler.Options{
		Role:          cfg.role,
		Spawner:       reconciler.Supervised(owner),
		Load:          load.all,
		LoadChanges:   load.changes,
		Changes:       d.w.Changes(),
		Checkpoint:    reconciler.Ledger(d.led, d.self, cfg.role),
		Holds:         holds.Open(cfg.State, d.self.BootID),
		StateDir:      cfg.State,
		UnitsDir:      cfg.Units,
		NotifySocket:  d.notifyPath,
		NotifySockets: d.notifySockets(),
		Lines:         logfile.Lines,
		OpenLog:       logfile.Open,
		Logs:          d.logs,
		StampOutput:   cfg.stamps,
		Relay:         startRelay,
		Supervisor: func() control.Supervisor {
			s := owner.Status()
			h, _ := control.ParseHealth(s.Health) // a word it does not know is kept, and written as it was said
			return control.Supervisor{PID: s.PID, Groups: s.Groups, Mode: s.Mode, Health: h, Ledger: s.Ledger, Orphans: s.Orphans}
		},
		Daemon:     control.Daemon{PID: os.Getpid(), Role: cfg.role, Started: started, Units: cfg.Units, State: cfg.State, Metrics: d.obs.addr()},
		Logger:     log,
		Runs:       px.runs(),
		ProxyURL:   px.url(),
		ProxyToken: px.currentToken,
		Proxy:      px.statusFunc(),
		Publish:    func(e events.Event) { d.fds.observe(e); d.obs.publish(e) },
		ClockSteps: wallclock.Watch,
		OnReady: func(n int) {
			sdNotify(log, "READY=1\nSTATUS="+strconv.Itoa(n)+" units running")
			close(d.started)
		},
	})
	if err != nil {
		return err
	}
	d.rec = rec
	return nil
}

// run runs the reconciler until ctx ends and its clean stop is done, with
// the helpers (startHelpers) beside it; then stops and joins the helpers
// and, at the same time, closes the supervisor. A reconciler that fails is
// exitcode.Usage.
func (d *instance) run(ctx context.Context) error {
	// Helpers live until the reconciler has finished its clean stop: the
	// control API keeps answering status during it.
	helpers, stopHelpers := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	d.startHelpers(helpers, ctx, &wg)
	wg.Go(func() { // see startHelpers: the socket serves on, unwatched
		select {
		case <-ctx.Done():
		case <-helpers.Done():
		}
		d.ln.Unwatch()
	})

	err := d.rec.Run(ctx)
	sdNotify(d.log, "STOPPING=1")
	if err != nil {
		stopHelpers()
		wg.Wait()
		return exit(exitcode.Usage, err)
	}
	// The supervisor's close (its last ledger write, the death
	// supervisor's exit) and the helpers' ends do not wait for each
	// other: one after the other, they cost hermesd's exit both (3 to 15
	// ms for the helpers at 100 units). A control call the helpers still
	// take meanwhile finds the supervisor closed (supervisor.ErrClosed),
	// as it would find hermesd gone a moment later.
	d.log.Info("units stopped; closing the supervisor, the control API and the notify socket")
	closed := make(chan error, 1)
	go func() { closed <- d.owner.Close() }() // joined below
	stopHelpers()
	wg.Wait()
	cerr := <-closed
	// The clean stop ended every owned group it stopped: one still
	// registered with the death supervisor (Close leaves the count as it
	// was) is a stop that failed (an unsafe group, a stop that could not
	// finish), and the exit says so; the death supervisor killed it at
	// Close. Survivors are not registered: they are left running on
	// purpose.
	if n := d.owner.Status().Groups; n > 0 {
		return exit(exitcode.Failure, fmt.Errorf("stop not clean: %d owned process groups had not ended when the units' stop was over; the death supervisor killed them", n))
	}
	if cerr != nil {
		return exit(exitcode.Failure, fmt.Errorf("close supervisor: %w", cerr))
	}
	d.log.Info("hermesd stopped")
	return nil
}

// startHelpers starts, in wg, the goroutines that serve the reconciler
// until ctx ends: the control API, the notify socket, the systemd
// watchdog, the proxy, the metrics, and the return of the start burst's
// memory. The units watcher and log rotation end sooner, when stopping
// does (the clean stop begins), and so does the watch of the control
// socket's directory (run): the kernel takes a grace period, often 10 to
// 20 ms, to tear down an inotify instance that watched anything, and
// that teardown then runs beside the units' stop instead of after it.
// Each logs its own failure.
func (d *instance) startHelpers(ctx, stopping context.Context, wg *sync.WaitGroup) {
	log, rec := d.log, d.rec
	wg.Go(func() {
		if err := control.NewServer(keptBackend{backend{rec, d.px, d.cfg.State}, newKeeper(ctx, d.owner, log, d.supervisorPID)}, control.Options{Logf: d.controlLogf, Events: d.obs.bus, Version: buildVersion(), Paths: controlPaths(d.cfg.Paths)}).Serve(ctx, d.fds.reserve.Listener(d.ln, "control", controlLimits, d.controlLogf)); err != nil {
			log.Error("control API stopped", "err", err)
		}
	})
	if d.ns != nil {
		wg.Go(func() {
			if err := d.ns.Run(ctx, func(m notify.Message) { rec.Notify(m.PID, m.Fields) }); err != nil && !errors.Is(err, context.Canceled) {
				log.Error("notify socket stopped", "err", err)
			}
		})
	}
	if d.nss != nil {
		wg.Go(func() {
			if err := d.nss.Run(ctx, func(m notify.Message) { rec.NotifyOn(m.Socket, m.PID, m.Fields) }); err != nil {
				log.Error("notify sockets stopped", "err", err)
			}
		})
	}
	wg.Go(func() {
		if err := d.w.Run(stopping); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("watching units stopped; hot reload is off", "err", err)
		}
	})
	wg.Go(func() { watchdog(ctx, log) })
	wg.Go(func() { returnMemory(ctx, d.started) })
	wg.Go(func() {
		if err := d.logs.Run(stopping); err != nil {
			log.Error("log rotation stopped", "err", err)
		}
	})
	wg.Go(func() { d.px.serve(ctx, &d.fds.reserve) })
	wg.Go(func() { d.obs.serve(ctx, &d.fds.reserve) })
	wg.Go(func() { d.serveProbes(ctx, &d.fds.reserve) })
}

// loader reads hermes.yaml (its unit defaults) and the units directory on
// every reload, reading again only the files that changed since cache
// had them. A config file that does not load keeps the last good
// defaults and is reported with the unit errors. seen is then given the
// config in force and what was loaded (loadHook).
type loader struct {
	cfg     config
	cache   *units.Cache
	log     *slog.Logger
	seen    func(units.Config, *reconciler.Loaded)
	changed func() (names []string, all bool) // the watcher's Changed
	last    *units.Config                     // the last good config; guarded by the reconciler's serialisation of loads
}

func newLoader(cfg config, cache *units.Cache, log *slog.Logger, seen func(units.Config, *reconciler.Loaded), changed func() ([]string, bool)) *loader {
	return &loader{cfg: cfg, cache: cache, log: log, seen: seen, changed: changed, last: units.DefaultConfig()}
}

// all is reconciler.Options.Load: every unit file is looked at (and
// read again if it changed).
func (ld *loader) all(ctx context.Context) (reconciler.Loaded, error) { return ld.load(ctx, nil) }

// changes is reconciler.Options.LoadChanges: the unit files the watcher
// named since the last call are looked at, the others taken from the
// cache (units.Loader.Changes); everything when the watcher could not
// name what changed.
func (ld *loader) changes(ctx context.Context) (reconciler.Loaded, error) {
	names, all := ld.changed()
	if all {
		return ld.load(ctx, nil)
	}
	return ld.load(ctx, &units.Changes{Names: names})
}

func (ld *loader) load(ctx context.Context, ch *units.Changes) (reconciler.Loaded, error) {
	var cfgErrs []*units.Error
	if c, err := units.LoadConfig(ld.cfg.Config); err != nil {
		cfgErrs = reconciler.ConfigErrors(err)
		ld.log.Error("config file not loaded; last good version kept", "err", err)
	} else {
		ld.last = c
	}
	l := &units.Loader{Defaults: &ld.last.Defaults, Insecure: ld.cfg.insecure, Cache: ld.cache, Unprivileged: os.Geteuid() != 0, Changes: ch}
	out, err := reconciler.LoadDir(l, ld.cfg.Units)(ctx)
	if err != nil {
		return out, err
	}
	out.Errors = append(cfgErrs, out.Errors...)
	ld.seen(*ld.last, &out)
	return out, nil
}

// both calls a, then b: two load hooks in one.
func both(a, b func(units.Config, *reconciler.Loaded)) func(units.Config, *reconciler.Loaded) {
	return func(c units.Config, l *reconciler.Loaded) { a(c, l); b(c, l) }
}

// sdNotify speaks to systemd when hermesd runs under it (NOTIFY_SOCKET set).
func sdNotify(log *slog.Logger, state string) {
	if _, err := daemon.SdNotify(false, state); err != nil {
		log.Warn("sd_notify failed", "err", err)
	}
}

// watchdog sends WATCHDOG=1 at half of WATCHDOG_USEC while ctx lasts, when
// systemd asked for it: a declared timer, absent otherwise.
func watchdog(ctx context.Context, log *slog.Logger) {
	d, err := daemon.SdWatchdogEnabled(false)
	if err != nil || d <= 0 {
		return
	}
	t := time.NewTicker(d / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			sdNotify(log, "WATCHDOG=1")
		}
	}
}

// controlPaths are hermesd's own paths as the control API reports them
// (GET /v1/paths): hermesctl reads the state and units directories there.
func controlPaths(p paths.Paths) control.Paths {
	return control.Paths{Config: p.Config, Units: p.Units, State: p.State, Socket: p.Socket, Logs: paths.Logs(p.State)}
}

// stampEnv turns timestamped logs of owned units (reconciler
// Options.StampOutput) off: "0" or "false"; unset, "1" or "true" leave
// them on. Off, every unit writes its log file directly, as a survivor
// does: its lines carry no time but the one the program prints, and no
// relay is ever started.
const stampEnv = "HERMES_LOG_STAMPS"

// stampOutput reads stampEnv: on unless it says off.
func stampOutput() (bool, error) {
	v, ok := os.LookupEnv(stampEnv)
	if !ok || v == "" {
		return true, nil
	}
	on, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s=%q: want 1 (owned units' lines stamped by hermesd, the default) or 0 (every unit writes its log file directly)", stampEnv, v)
	}
	return on, nil
}
