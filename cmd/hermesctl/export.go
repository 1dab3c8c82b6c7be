package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/internal/paths"
	"github.com/hermes-units/hermes/internal/systemdunit"
	"github.com/hermes-units/hermes/units"
	"github.com/spf13/cobra"
)

func newExportCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write units, or hermesd itself, in another service manager's format",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newExportSystemdCmd(g))
	cmd.AddCommand(newExportLaunchdCmd(g))
	return cmd
}

// exportResult is the -o json output of export systemd and export launchd.
type exportResult struct {
	Dir    string        `json:"dir"`
	Files  []string      `json:"files"`
	Errors []exportError `json:"errors"`
}

type exportError struct {
	Unit  string `json:"unit"`
	Error string `json:"error"`
}

// exportOptions are the flags and arguments of export systemd, and where
// it prints.
type exportOptions struct {
	clientOptions
	names    []string // the units to export; none: every unit of --units
	dir      string   // --dir
	force    bool     // --force
	hermesd  string   // --hermesd
	gateway  bool     // --gateway
	only     bool     // --only-gateway
	insecure bool     // --insecure-units
	watchdog time.Duration
	daemon   bool // a hermesd answered on the socket: its paths are in g (daemonPaths)
}

// newExportSystemdCmd is export systemd; runExportSystemd does the work.
func newExportSystemdCmd(g *globals) *cobra.Command {
	opts := &exportOptions{clientOptions: clientOptions{g: g}}
	cmd := opts.command(&cobra.Command{
		Use:   "systemd [UNIT...] --dir DIR",
		Short: "Write systemd user units with the same semantics, and hermesd.service",
		Long: `Write a systemd user unit (NAME.service, and NAME.timer for a job) for each
unit of the units directory, or for the units named, with the same semantics
as far as systemd has them: command, working directory, environment,
restart policy and backoff, start limit, readiness (Type=notify), timeouts,
stop signal, dependencies, log file, identity (User=, Group=,
SupplementaryGroups=), UMask=, Nice=, limits: (Limit*=), env_file:
(EnvironmentFile=, "-" for an optional file), memory_max (MemoryMax=),
cpu_weight (CPUWeight=), cpu_max (CPUQuota=) and tasks_max (TasksMax=).
What systemd cannot express, or reads otherwise, is said in a comment in
the file (User= and Group= hold only in a system unit; systemd adds
SupplementaryGroups= to the user's own groups; EnvironmentFile= comes
before Environment=). Also writes hermesd.service, which runs the gateway
itself under systemd (KillMode=process, Delegate=yes for cgroup mode).

When a hermesd answers on the socket, its units directory, state directory,
hermes.yaml and socket are used (a path given with a flag or HERMES_* still
wins); otherwise those of the flags, HERMES_* and the defaults.

With --only-gateway, writes hermesd.service alone (hermesd then runs the
units itself, as always): the way to run hermesd at login,
  hermesctl export systemd --only-gateway --dir ~/.config/systemd/user
  systemctl --user daemon-reload && systemctl --user enable --now hermesd

Files are written atomically into DIR (created if missing), for example
~/.config/systemd/user; existing files are overwritten only with --force.
Then: systemctl --user daemon-reload.`,
		ValidArgsFunction: completeUnits(g),
	}, func(ctx context.Context, args []string) error {
		opts.daemon = g.daemonPaths(ctx)
		var err error
		if opts.names, err = expandUnits(ctx, g, args, fileUnits); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		return runExportSystemd(opts)
	})
	f := cmd.Flags()
	f.StringVar(&opts.dir, "dir", "", "directory to write the unit files to, e.g. ~/.config/systemd/user (required)")
	f.BoolVar(&opts.force, "force", false, "overwrite files that exist")
	f.StringVar(&opts.hermesd, "hermesd", "", "path of the hermesd binary for hermesd.service (default: next to hermesctl, else from PATH)")
	f.BoolVar(&opts.gateway, "gateway", true, "also write hermesd.service")
	f.BoolVar(&opts.only, "only-gateway", false, "write hermesd.service alone: hermesd runs the units (no units directory needed)")
	f.DurationVar(&opts.watchdog, "watchdog", 30*time.Second, "WatchdogSec of hermesd.service (hermesd pings at half of it; 0: none)")
	f.BoolVar(&opts.insecure, "insecure-units", false, "load unit files and directories that other users can write (unsafe)")
	_ = cmd.MarkFlagRequired("dir") // the flag is defined just above
	return cmd
}

// runExportSystemd writes systemd user units for the units of --units (all,
// or those named) and a hermesd.service. Units that cannot be exported are
// reported and the others written; exit 1 then. A file that exists is
// overwritten only with --force; otherwise nothing is written.
func runExportSystemd(opts *exportOptions) error {
	if opts.only && (len(opts.names) > 0 || !opts.gateway) {
		return &exitError{code: exitcode.Usage, err: errors.New("export: --only-gateway writes hermesd.service alone: name no unit, and leave --gateway on")}
	}
	cfg, files, errs, err := exportSources(opts)
	if err != nil {
		return &exitError{code: exitcode.Failure, err: fmt.Errorf("export: %w", err)}
	}
	res := exportResult{Dir: opts.dir, Files: []string{}, Errors: errs}
	if opts.gateway {
		gw, err := gatewayFile(opts.g, cfg, opts.hermesd, opts.watchdog, opts.daemon)
		if err != nil {
			return &exitError{code: exitcode.Failure, err: fmt.Errorf("export: %w", err)}
		}
		files = append(files, gw)
	}
	if err := systemdunit.Write(opts.dir, files, opts.force); err != nil {
		if errors.Is(err, systemdunit.ErrExists) {
			err = fmt.Errorf("%w (nothing was written)", err)
		}
		return &exitError{code: exitcode.Failure, err: fmt.Errorf("export: %w", err)}
	}
	for _, f := range files {
		res.Files = append(res.Files, filepath.Join(opts.dir, f.Name))
	}
	if err := printExport(opts, res); err != nil {
		return err
	}
	if n := len(res.Errors); n > 0 {
		return &exitError{code: exitcode.Failure, err: fmt.Errorf("export: %d %s not exported (listed above)", n, plural(n, "unit", "units"))}
	}
	return nil
}

// exportSources loads hermes.yaml and, unless --only-gateway, the units
// to export, and builds their files.
func exportSources(opts *exportOptions) (*units.Config, []systemdunit.File, []exportError, error) {
	if opts.only {
		cfg, err := units.LoadConfig(opts.g.Config)
		return cfg, nil, []exportError{}, err
	}
	cfg, d, err := exportLoad(opts)
	if err != nil {
		return nil, nil, nil, err
	}
	names := opts.names
	if len(names) == 0 {
		names = exportAll(d)
	}
	files, errs := exportUnits(d, names, systemdunit.Options{StateDir: absPath(opts.g.State), LookPath: exec.LookPath})
	return cfg, files, append([]exportError{}, errs...), nil
}

// exportLoad loads hermes.yaml and, with its unit defaults, the units
// directory.
func exportLoad(opts *exportOptions) (*units.Config, *units.Dir, error) {
	loader := units.Loader{Insecure: opts.insecure}
	cfg, err := units.LoadConfig(opts.g.Config)
	if err != nil {
		return nil, nil, err
	}
	loader.Defaults = &cfg.Defaults
	d, err := loader.LoadDir(opts.g.Units)
	if err != nil {
		if _, serr := os.Stat(opts.g.Units); errors.Is(serr, fs.ErrNotExist) {
			return nil, nil, missingUnitsDir(opts.g, opts.daemon)
		}
		return nil, nil, err
	}
	return cfg, d, nil
}

// missingUnitsDir says that g's units directory does not exist, where
// that path came from (answered: from the hermesd behind the socket), and
// how to name another.
func missingUnitsDir(g *globals, answered bool) error {
	var from string
	switch {
	case g.from.Units.Given():
		from = "from --units or HERMES_UNITS"
	case answered:
		from = "the running hermesd's, on " + g.Socket
	case g.from.Units == paths.FromFile:
		from = "from " + g.Config
	default:
		from = "the default; no hermesd answered on " + g.Socket
	}
	return fmt.Errorf("units directory %s (%s) does not exist; name another with --units DIR or HERMES_UNITS", absPath(g.Units), from)
}

// exportAll names every unit of d, those that load and those that do not,
// sorted.
func exportAll(d *units.Dir) []string {
	return slices.Sorted(func(yield func(string) bool) {
		for n := range d.Units {
			if !yield(n) {
				return
			}
		}
		for n := range d.Failed {
			if !yield(n) {
				return
			}
		}
	})
}

// exportUnits builds the systemd files of the units names of d, in order,
// and the error of each unit that is not in d, does not load, or cannot be
// exported.
func exportUnits(d *units.Dir, names []string, opts systemdunit.Options) ([]systemdunit.File, []exportError) {
	var files []systemdunit.File
	var errs []exportError
	for _, n := range names {
		s, ok := d.Units[n]
		if !ok {
			msg := fmt.Sprintf("no unit %q in %s", n, d.Path)
			if es, failed := d.Failed[n]; failed {
				msg = fmt.Sprintf("does not load: %v; fix it (hermesctl validate shows where)", es)
			}
			errs = append(errs, exportError{Unit: n, Error: msg})
			continue
		}
		fs, err := systemdunit.Files(s, opts)
		if err != nil {
			errs = append(errs, exportError{Unit: n, Error: err.Error()})
			continue
		}
		files = append(files, fs...)
	}
	return files, errs
}

// printExport prints res: as JSON, or the files written on out, the units
// not exported on errOut, then the next step.
func printExport(opts *exportOptions, res exportResult) error {
	if opts.json {
		return writeJSON(opts.out, res)
	}
	for _, f := range res.Files {
		fmt.Fprintf(opts.out, "wrote %s\n", f)
	}
	for _, e := range res.Errors {
		fmt.Fprintf(opts.errOut, "hermesctl: export: unit %s: %s\n", e.Unit, e.Error)
	}
	switch {
	case opts.only:
		fmt.Fprintln(opts.out, "next: systemctl --user daemon-reload && systemctl --user enable --now hermesd")
	case len(res.Files) > 0:
		fmt.Fprintln(opts.out, "next: systemctl --user daemon-reload")
	}
	return nil
}

// gatewayFile builds hermesd.service for the paths hermesctl resolved, or
// took from the hermesd behind the socket (daemon). The socket is named
// when the user gave it or a hermesd listens on it: the service then
// listens where the running one does.
func gatewayFile(g *globals, cfg *units.Config, hermesd string, watchdog time.Duration, daemon bool) (systemdunit.File, error) {
	if hermesd == "" {
		hermesd = findHermesd()
	}
	if hermesd == "" {
		return systemdunit.File{}, errors.New("cannot find the hermesd binary next to hermesctl or in PATH; pass --hermesd PATH (or --gateway=false)")
	}
	gw := systemdunit.Gateway{Hermesd: absPath(hermesd), Units: absPath(g.Units), State: absPath(g.State), Watchdog: watchdog}
	if cfg.File != "" {
		gw.Config = absPath(cfg.File)
	}
	if g.from.Socket.Given() || daemon {
		gw.Socket = absPath(g.Socket)
	}
	return systemdunit.GatewayFile(gw)
}

// findHermesd looks for hermesd next to the running hermesctl, then in
// PATH; "" when neither has it.
func findHermesd() string {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "hermesd")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	if p, err := exec.LookPath("hermesd"); err == nil {
		return p
	}
	return ""
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
