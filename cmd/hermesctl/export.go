package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/hermes-units/hermes/internal/systemdunit"
	"github.com/hermes-units/hermes/units"
	"github.com/spf13/cobra"
)

func newExportCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write units in another service manager's format",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newExportSystemdCmd(g))
	return cmd
}

// exportResult is the -o json output of export systemd.
type exportResult struct {
	Dir    string        `json:"dir"`
	Files  []string      `json:"files"`
	Errors []exportError `json:"errors"`
}

type exportError struct {
	Unit  string `json:"unit"`
	Error string `json:"error"`
}

// newExportSystemdCmd writes systemd user units for the units of --units
// (all, or those named) and a hermesd.service. Units that cannot be
// exported are reported and the others written; exit 1 then. A file that
// exists is overwritten only with --force; otherwise nothing is written.
func newExportSystemdCmd(g *globals) *cobra.Command {
	var (
		dir      string
		force    bool
		hermesd  string
		gateway  bool
		insecure bool
		watchdog time.Duration
	)
	cmd := &cobra.Command{
		Use:   "systemd [UNIT...] --dir DIR",
		Short: "Write systemd user units with the same semantics, and hermesd.service",
		Long: `Write a systemd user unit (NAME.service, and NAME.timer for a job) for each
unit of the units directory, or for the units named, with the same semantics
as far as systemd has them: command, working directory, environment,
restart policy and backoff, start limit, readiness (Type=notify), timeouts,
stop signal, dependencies, log file. What systemd cannot express is said in
a comment in the file. Also writes hermesd.service, which runs the gateway
itself under systemd (KillMode=process, Delegate=yes for cgroup mode).

Files are written atomically into DIR (created if missing), for example
~/.config/systemd/user; existing files are overwritten only with --force.
Then: systemctl --user daemon-reload.`,
		ValidArgsFunction: completeUnits(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := g.jsonOutput()
			if err != nil {
				return err
			}
			loader := units.Loader{Insecure: insecure}
			cfg, err := units.LoadConfig(g.Config)
			if err != nil {
				return &exitError{code: 1, err: fmt.Errorf("export: %w", err)}
			}
			loader.Defaults = &cfg.Defaults
			d, err := loader.LoadDir(g.Units)
			if err != nil {
				return &exitError{code: 1, err: fmt.Errorf("export: %w", err)}
			}
			res := exportResult{Dir: dir, Files: []string{}, Errors: []exportError{}}
			names := args
			if len(names) == 0 {
				names = slices.Sorted(func(yield func(string) bool) {
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
			opts := systemdunit.Options{StateDir: absPath(g.State), LookPath: exec.LookPath}
			var files []systemdunit.File
			for _, n := range names {
				s, ok := d.Units[n]
				if !ok {
					msg := fmt.Sprintf("no unit %q in %s", n, d.Path)
					if es, failed := d.Failed[n]; failed {
						msg = fmt.Sprintf("does not load: %v; fix it (hermesctl validate shows where)", es)
					}
					res.Errors = append(res.Errors, exportError{Unit: n, Error: msg})
					continue
				}
				fs, err := systemdunit.Files(s, opts)
				if err != nil {
					res.Errors = append(res.Errors, exportError{Unit: n, Error: err.Error()})
					continue
				}
				files = append(files, fs...)
			}
			if gateway {
				gw, err := gatewayFile(g, cfg, hermesd, watchdog)
				if err != nil {
					return &exitError{code: 1, err: fmt.Errorf("export: %w", err)}
				}
				files = append(files, gw)
			}
			if err := systemdunit.Write(dir, files, force); err != nil {
				if errors.Is(err, systemdunit.ErrExists) {
					err = fmt.Errorf("%w (nothing was written)", err)
				}
				return &exitError{code: 1, err: fmt.Errorf("export: %w", err)}
			}
			for _, f := range files {
				res.Files = append(res.Files, filepath.Join(dir, f.Name))
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSON(out, res); err != nil {
					return err
				}
			} else {
				for _, f := range res.Files {
					fmt.Fprintf(out, "wrote %s\n", f)
				}
				for _, e := range res.Errors {
					fmt.Fprintf(cmd.ErrOrStderr(), "hermesctl: export: unit %s: %s\n", e.Unit, e.Error)
				}
				if len(res.Files) > 0 {
					fmt.Fprintln(out, "next: systemctl --user daemon-reload")
				}
			}
			if n := len(res.Errors); n > 0 {
				return &exitError{code: 1, err: fmt.Errorf("export: %d %s not exported (listed above)", n, plural(n, "unit", "units"))}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "directory to write the unit files to, e.g. ~/.config/systemd/user (required)")
	f.BoolVar(&force, "force", false, "overwrite files that exist")
	f.StringVar(&hermesd, "hermesd", "", "path of the hermesd binary for hermesd.service (default: next to hermesctl, else from PATH)")
	f.BoolVar(&gateway, "gateway", true, "also write hermesd.service")
	f.DurationVar(&watchdog, "watchdog", 30*time.Second, "WatchdogSec of hermesd.service (hermesd pings at half of it; 0: none)")
	f.BoolVar(&insecure, "insecure-units", false, "load unit files and directories that other users can write (unsafe)")
	_ = cmd.MarkFlagRequired("dir") // the flag is defined just above
	return cmd
}

// gatewayFile builds hermesd.service for the paths hermesctl resolved.
func gatewayFile(g *globals, cfg *units.Config, hermesd string, watchdog time.Duration) (systemdunit.File, error) {
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
