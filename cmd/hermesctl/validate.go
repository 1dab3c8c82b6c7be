package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/units"
	"github.com/spf13/cobra"
)

// validateOptions are the flags and arguments of validate, and where it
// prints.
type validateOptions struct {
	clientOptions
	paths    []string // the PATH arguments; none: the config and the units directory
	insecure bool     // --insecure-units
	euid     hermesdUID
}

// hermesdUID is the effective uid hermesd is taken to run as: the user's
// own (os.Geteuid) when nil, since the user who checks the units is
// normally the one who runs hermesd. Under a uid other than 0, user:,
// group: and supplementary_groups: are refused, as hermesd refuses them
// (units.Loader.Unprivileged).
type hermesdUID func() int

func (u hermesdUID) unprivileged() bool {
	if u == nil {
		return os.Geteuid() != 0
	}
	return u() != 0
}

// newValidateCmd is validate; runValidate does the work.
func newValidateCmd(g *globals) *cobra.Command {
	opts := &validateOptions{clientOptions: clientOptions{g: g}}
	cmd := opts.command(&cobra.Command{
		Use:   "validate [PATH...]",
		Short: "Check unit files and hermes.yaml offline, no daemon needed",
		Long: `Check unit files and the main config without a daemon, with the errors
hermesd would give, each as file:line:col: message.

With no PATH, checks the config file (--config) and the units directory
(--units, or units: in the config). A PATH may be a units directory (every
unit and the cross-unit rules: dependencies exist, no cycles, no shared
ports), a hermes.yaml / hermes.yml file, or a unit file.

Unit files are checked as if copied into the units directory: that of the
running hermesd when one answers (unless --units or HERMES_UNITS names
one), else --units, units: in the config, or the default. Each replaces the
directory's unit of its name, and the cross-unit rules apply to them with
the directory's other units: after:/requires: name a unit there or among
the files, no cycle goes through them, and a port a unit of the directory
declares is not theirs (the directory's unit may be running: the file is
the change, and fails). The errors printed are the files'. With no units
directory there, each file is checked alone (its own rules), and stderr
says so.

The files are checked for a hermesd that runs as the user running
validate: unless that is root, user:, group: and supplementary_groups:
(a unit's, or those of the config's defaults:) are errors, as hermesd
refuses them when it is not root. Run validate as hermesd's user.

-o json prints {"valid": ..., "errors": [{"file", "line", "column",
"message"}], "units": N, "config": ..., "units_dir": ...}. Exits 1 on any
error.`,
	}, func(ctx context.Context, args []string) error {
		opts.paths = args
		return runValidate(ctx, opts)
	})
	cmd.Flags().BoolVar(&opts.insecure, "insecure-units", false, "load unit files and directories that other users can write (unsafe)")
	return cmd
}

// runValidate checks unit files and hermes.yaml offline, with the same
// loader (and so the same errors) as hermesd, and prints the errors found
// and a summary. Exit status: 0 when every file is valid, 1 on any error.
func runValidate(ctx context.Context, opts *validateOptions) error {
	g := opts.g
	v := &validator{loader: units.Loader{Insecure: opts.insecure, Unprivileged: opts.euid.unprivileged()}, note: opts.errOut}
	if len(opts.paths) == 0 {
		v.defaultPaths(g, g.daemonPaths(ctx))
	}
	var files []string
	for _, p := range opts.paths {
		if f := v.path(p, g); f != "" {
			files = append(files, f)
		}
	}
	if len(files) > 0 {
		v.overlay(g, g.daemonPaths(ctx), files)
	}
	return v.print(opts.out, opts.json)
}

type validator struct {
	loader units.Loader
	note   io.Writer // where a note on how files were checked goes (stderr)
	units  int       // units valid
	config string    // the config file read, if one was
	cfg    *units.Config
	with   string // the units directory unit files were checked with
	others int    // the units of with that the files were checked with
	errs   units.Errors
}

// validateReport is validate's -o json output.
type validateReport struct {
	Valid    bool                  `json:"valid"`
	Errors   []control.ConfigError `json:"errors"`
	Units    int                   `json:"units"` // units valid
	Config   string                `json:"config,omitempty"`
	UnitsDir string                `json:"units_dir,omitempty"` // the units directory unit files were checked with
}

func (v *validator) report(err error) {
	var es units.Errors
	if !errors.As(err, &es) {
		if e, ok := errors.AsType[*units.Error](err); ok {
			es = units.Errors{e}
		} else {
			es = units.Errors{{File: "?", Msg: err.Error()}}
		}
	}
	v.errs = append(v.errs, es...)
}

// print writes the errors found and a summary (or the validateReport), and
// returns the exit status: an exitError of 1 on any error.
func (v *validator) print(out io.Writer, asJSON bool) error {
	if asJSON {
		r := validateReport{Valid: len(v.errs) == 0, Errors: []control.ConfigError{}, Units: v.units, Config: v.config, UnitsDir: v.with}
		for _, e := range v.errs {
			r.Errors = append(r.Errors, control.ConfigError{File: e.File, Line: e.Line, Column: e.Column, Message: e.Msg})
		}
		if err := writeJSON(out, r); err != nil {
			return err
		}
	} else {
		for _, e := range v.errs {
			fmt.Fprintln(out, inert(e.Error()))
		}
	}
	if len(v.errs) > 0 {
		bad := map[string]bool{}
		for _, e := range v.errs {
			bad[e.File] = true
		}
		return &exitError{code: exitcode.Failure, err: fmt.Errorf("validate: %d error(s) in %d file(s)", len(v.errs), len(bad))}
	}
	if !asJSON {
		fmt.Fprintf(out, "ok: %s\n", v.summary())
	}
	return nil
}

// unitsDir is the units directory of g: --units or HERMES_UNITS when
// given, else the running hermesd's (daemon: g holds its paths), else
// units: from the config, else the default.
func (v *validator) unitsDir(g *globals, daemon bool) string {
	if !daemon && !g.from.Units.Given() && v.cfg != nil && v.cfg.Daemon.Units != "" {
		return v.cfg.Daemon.Units
	}
	return g.Units
}

// defaultPaths validates the config, then the units directory (unitsDir)
// with the config's unit defaults.
func (v *validator) defaultPaths(g *globals, daemon bool) {
	v.loadConfig(g.Config)
	v.dir(v.unitsDir(g, daemon))
}

func (v *validator) loadConfig(path string) {
	cfg, err := units.LoadConfig(path)
	if err != nil {
		v.report(err)
		return
	}
	if cfg.File != "" {
		v.config = path
	}
	v.cfg = cfg
	v.loader.Defaults = &cfg.Defaults
}

// path validates a directory or a config file given as p, and returns p
// when it is a unit file (or not found to be anything else), for overlay.
func (v *validator) path(p string, g *globals) string {
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		v.report(&units.Error{File: p, Msg: "no such file or directory", Err: units.ErrFile})
		return ""
	}
	fi, err := os.Stat(p)
	switch {
	case err == nil && fi.IsDir():
		v.dir(p)
	case isConfigPath(p, g):
		v.loadConfig(p)
	default:
		return p
	}
	return ""
}

func isConfigPath(p string, g *globals) bool {
	base := filepath.Base(p)
	if base == "hermes.yaml" || base == "hermes.yml" {
		return true
	}
	a, err1 := filepath.Abs(p)
	b, err2 := filepath.Abs(g.Config)
	return err1 == nil && err2 == nil && a == b
}

func (v *validator) dir(dir string) {
	d, err := v.loader.LoadDir(dir)
	if err != nil {
		v.report(err)
		return
	}
	v.report(d.Errors())
	v.units += len(d.Units)
}

// overlay checks unit files laid over the units directory (unitsDir, with
// the config's defaults unless a config was given as a PATH), reporting
// the files' errors at the paths given; with no such directory, or one
// that cannot be read, each file alone.
func (v *validator) overlay(g *globals, daemon bool, files []string) {
	if v.cfg == nil {
		v.loadConfig(g.Config)
	}
	dir := v.unitsDir(g, daemon)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(v.note, "validate: no units directory %s: each file is checked alone, without the cross-unit rules (--units names the directory)\n", inert(dir))
		v.alone(files)
		return
	}
	d, err := v.loader.LoadDirWith(dir, files...)
	if err != nil {
		v.report(err)
		v.alone(files)
		return
	}
	v.with = dir
	given := map[string]bool{}
	for _, f := range files {
		name, ok := units.NameOf(filepath.Base(f))
		if !ok {
			name = filepath.Base(f)
		}
		given[name] = true
		for _, e := range d.Failed[name] {
			if e.File != f && sameFile(e.File, f) {
				e.File = f // as given, for a cross-unit error
			}
			v.errs = append(v.errs, e)
		}
	}
	for name := range d.Units {
		if given[name] {
			v.units++
		} else {
			v.others++
		}
	}
	for name := range d.Failed {
		if !given[name] {
			v.others++
		}
	}
}

// alone checks each unit file by its own rules.
func (v *validator) alone(files []string) {
	for _, f := range files {
		if _, err := v.loader.Load(f); err != nil {
			v.report(err)
			continue
		}
		v.units++
	}
}

func sameFile(a, b string) bool {
	a, err1 := filepath.Abs(a)
	b, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && a == b
}

func (v *validator) summary() string {
	n := v.units
	if n == 0 && v.config != "" {
		return "config " + v.config + " valid"
	}
	s := fmt.Sprintf("%d unit(s) valid", n)
	if v.with != "" {
		s += fmt.Sprintf(" with the %d other unit(s) of %s", v.others, inert(v.with))
	}
	if v.config != "" {
		s += ", config " + v.config
	} else {
		s += ", no config file (defaults)"
	}
	return s
}
