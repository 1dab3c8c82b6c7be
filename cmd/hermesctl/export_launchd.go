package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/internal/launchd"
	"github.com/hermes-units/hermes/internal/systemdunit"
	"github.com/hermes-units/hermes/units"
	"github.com/spf13/cobra"
)

// launchdThrottle is the agent's ThrottleInterval: launchd starts hermesd
// again no sooner than this after its last start (launchd's own default
// is 10 s; hermesd re-adopts its survivors at each start, so sooner is
// better, but not in a tight loop).
const launchdThrottle = 5 * time.Second

// launchdOptions are the flags of export launchd, and where it prints.
type launchdOptions struct {
	clientOptions
	dir         string   // --dir
	force       bool     // --force
	hermesd     string   // --hermesd
	label       string   // --label
	logDir      string   // --log-dir
	env         []string // --env KEY=VALUE, in order; a later one wins
	workDir     string   // --workdir
	exitTimeout time.Duration
	daemon      bool // a hermesd answered on the socket: its paths are in g (daemonPaths)
}

// newExportLaunchdCmd is export launchd; runExportLaunchd does the work.
func newExportLaunchdCmd(g *globals) *cobra.Command {
	opts := &launchdOptions{clientOptions: clientOptions{g: g}}
	home, _ := os.UserHomeDir()
	cmd := opts.command(&cobra.Command{
		Use:   "launchd --dir DIR",
		Short: "Write the launchd LaunchAgent that runs hermesd on macOS",
		Long: `Write LABEL.plist (default ` + launchd.FileName(launchd.DefaultLabel) + `), a launchd user agent
that runs hermesd with the config, units, state and socket paths of the
hermesd that answers on the socket, if one does (a path given with a flag or
HERMES_* still wins), else those hermesctl resolved (the socket only if
given), as absolute paths: started at login (RunAtLoad),
restarted after a crash or a kill (KeepAlive), stopped with TERM then KILL
after --exit-timeout, logging to --log-dir, with AbandonProcessGroup true so
that launchd leaves the survivors (adoptable, persist_on_release) alone when
hermesd exits; owned units die through hermes's own supervisor. Its
EnvironmentVariables are PATH as hermesctl has it (launchd's own is
/usr/bin:/bin:/usr/sbin:/sbin) and each --env. Only hermesd becomes a
launchd job: it runs the units itself, as on Linux, and applies their
user:, group:, umask, nice, limits: and env_file: as it starts each (so
none of them is a key of the agent: the plist's UserName, Umask, Nice and
resource limits would be hermesd's own).

What launchd cannot express (the file says it too):
  ` + strings.Join(launchd.Limitations, "\n  ") + `

The file is written atomically into DIR (created if missing), for example
~/Library/LaunchAgents; an existing file is overwritten only with --force.
Then create the log directory and load it:
  launchctl bootstrap gui/$(id -u) DIR/LABEL.plist
(launchctl bootout gui/$(id -u)/LABEL first, if an older one is loaded).`,
		Args: cobra.NoArgs,
	}, func(ctx context.Context, _ []string) error {
		opts.daemon = g.daemonPaths(ctx)
		return runExportLaunchd(opts)
	})
	f := cmd.Flags()
	f.StringVar(&opts.dir, "dir", "", "directory to write the plist to, e.g. ~/Library/LaunchAgents (required)")
	f.BoolVar(&opts.force, "force", false, "overwrite the file if it exists")
	f.StringVar(&opts.hermesd, "hermesd", "", "path of the hermesd binary (default: next to hermesctl, else from PATH)")
	f.StringVar(&opts.label, "label", launchd.DefaultLabel, "the job's Label, and the file's name")
	f.StringVar(&opts.logDir, "log-dir", filepath.Join(home, "Library", "Logs", "hermes"), "directory of hermesd's "+launchd.StderrName+" (stderr) and "+launchd.StdoutName+" (stdout)")
	f.StringArrayVar(&opts.env, "env", nil, "KEY=VALUE to put in hermesd's environment (repeatable; PATH=… replaces hermesctl's PATH)")
	f.StringVar(&opts.workDir, "workdir", "", "hermesd's working directory (default: launchd's, /; units run in their own workdir either way)")
	f.DurationVar(&opts.exitTimeout, "exit-timeout", 90*time.Second, "ExitTimeOut: how long launchd waits after TERM before it kills hermesd (whole seconds, rounded up)")
	_ = cmd.MarkFlagRequired("dir") // the flag is defined just above
	return cmd
}

// runExportLaunchd writes the plist. It writes nothing when a flag is
// wrong (exit 2), hermes.yaml does not load, or the file exists without
// --force (exit 1).
func runExportLaunchd(opts *launchdOptions) error {
	gw, err := launchdGateway(opts)
	if err != nil {
		return err
	}
	doc, err := launchd.Plist(gw)
	if err != nil {
		return &exitError{code: exitcode.Usage, err: fmt.Errorf("export launchd: %w", err)}
	}
	name := launchd.FileName(gw.Label)
	if err := systemdunit.Write(opts.dir, []systemdunit.File{{Name: name, Content: doc}}, opts.force); err != nil {
		if errors.Is(err, systemdunit.ErrExists) {
			err = fmt.Errorf("%w (nothing was written)", err)
		}
		return &exitError{code: exitcode.Failure, err: fmt.Errorf("export launchd: %w", err)}
	}
	file := filepath.Join(opts.dir, name)
	if opts.json {
		return writeJSON(opts.out, exportResult{Dir: opts.dir, Files: []string{file}, Errors: []exportError{}})
	}
	fmt.Fprintf(opts.out, "wrote %s\n", file)
	fmt.Fprintf(opts.out, "next: mkdir -p %s && launchctl bootstrap gui/$(id -u) %s\n", shellQuote(gw.LogDir), shellQuote(absPath(file)))
	return nil
}

// launchdGateway builds the agent's description from the flags and the
// paths hermesctl resolved, or took from the hermesd behind the socket
// (whose socket it then names, as when the user gave one). hermes.yaml is read so that one that does not
// load fails here, not at hermesd's first start under launchd; --config is
// passed when the file exists or was named.
func launchdGateway(opts *launchdOptions) (launchd.Gateway, error) {
	g := opts.g
	cfg, err := units.LoadConfig(g.Config)
	if err != nil {
		return launchd.Gateway{}, &exitError{code: exitcode.Failure, err: fmt.Errorf("export launchd: %w", err)}
	}
	hermesd := opts.hermesd
	if hermesd == "" {
		hermesd = findHermesd()
	}
	if hermesd == "" {
		return launchd.Gateway{}, &exitError{code: exitcode.Failure, err: errors.New("export launchd: cannot find the hermesd binary next to hermesctl or in PATH; pass --hermesd PATH")}
	}
	env, err := launchdEnv(opts.env)
	if err != nil {
		return launchd.Gateway{}, &exitError{code: exitcode.Usage, err: fmt.Errorf("export launchd: %w", err)}
	}
	gw := launchd.Gateway{
		Label:       opts.label,
		Hermesd:     absPath(hermesd),
		Units:       absPath(g.Units),
		State:       absPath(g.State),
		LogDir:      absPath(opts.logDir),
		Env:         env,
		Throttle:    launchdThrottle,
		ExitTimeout: opts.exitTimeout,
	}
	if cfg.File != "" || g.from.Config.Given() {
		gw.Config = absPath(g.Config)
	}
	if g.from.Socket.Given() || opts.daemon {
		gw.Socket = absPath(g.Socket)
	}
	if opts.workDir != "" {
		gw.WorkDir = absPath(opts.workDir)
	}
	return gw, nil
}

// launchdEnv is hermesd's EnvironmentVariables: PATH as hermesctl has it,
// then each KEY=VALUE of --env in order (a later one wins).
func launchdEnv(pairs []string) (map[string]string, error) {
	env := map[string]string{}
	if p, ok := os.LookupEnv("PATH"); ok {
		env["PATH"] = p
	}
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--env %q: want KEY=VALUE, e.g. --env LANG=en_US.UTF-8", kv)
		}
		env[k] = v
	}
	return env, nil
}
