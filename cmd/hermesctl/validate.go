package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hermes-units/hermes/units"
	"github.com/spf13/cobra"
)

// newValidateCmd checks unit files and hermes.yaml offline, with the same
// loader (and so the same errors) as hermesd. Exit status: 0 when every
// file is valid, 1 on any error.
func newValidateCmd(g *globals) *cobra.Command {
	var insecure bool
	cmd := &cobra.Command{
		Use:   "validate [PATH...]",
		Short: "Check unit files and hermes.yaml offline, no daemon needed",
		Long: `Check unit files and the main config without a daemon, with the errors
hermesd would give, each as file:line:col: message.

With no PATH, checks the config file (--config) and the units directory
(--units, or units: in the config). A PATH may be a units directory (every
unit and the cross-unit rules: dependencies exist, no cycles, no shared
ports), a unit file (its own rules), or a hermes.yaml / hermes.yml file.
Exits 1 on any error.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := &validator{out: cmd.OutOrStdout(), loader: units.Loader{Insecure: insecure}}
			if len(args) == 0 {
				v.defaultPaths(g, g.daemonPaths(cmd.Context()))
			}
			for _, p := range args {
				v.path(p, g)
			}
			if v.errs > 0 {
				return &exitError{code: 1, err: fmt.Errorf("validate: %d error(s) in %d file(s)", v.errs, len(v.bad))}
			}
			fmt.Fprintf(v.out, "ok: %s\n", v.summary())
			return nil
		},
	}
	cmd.Flags().BoolVar(&insecure, "insecure-units", false, "load unit files and directories that other users can write (unsafe)")
	return cmd
}

type validator struct {
	out    io.Writer
	loader units.Loader
	units  int
	files  int // unit files given one by one
	config string
	errs   int
	bad    map[string]bool
}

func (v *validator) report(err error) {
	var es units.Errors
	if !errors.As(err, &es) {
		var e *units.Error
		if errors.As(err, &e) {
			es = units.Errors{e}
		} else {
			es = units.Errors{{File: "?", Msg: err.Error()}}
		}
	}
	if v.bad == nil {
		v.bad = map[string]bool{}
	}
	for _, e := range es {
		fmt.Fprintln(v.out, inert(e.Error()))
		v.errs++
		v.bad[e.File] = true
	}
}

// defaultPaths validates the config, then the units directory with the
// config's unit defaults. The directory is --units or HERMES_UNITS when
// given, else the running hermesd's (daemon: g holds its paths), else
// units: from the config, else the default.
func (v *validator) defaultPaths(g *globals, daemon bool) {
	dir := g.Units
	if cfg := v.loadConfig(g.Config); cfg != nil {
		if !daemon && !g.from.Units.Given() && cfg.Daemon.Units != "" {
			dir = cfg.Daemon.Units
		}
	}
	v.dir(dir)
}

func (v *validator) loadConfig(path string) *units.Config {
	cfg, err := units.LoadConfig(path)
	if err != nil {
		v.report(err)
		return nil
	}
	if cfg.File != "" {
		v.config = path
	}
	v.loader.Defaults = &cfg.Defaults
	return cfg
}

func (v *validator) path(p string, g *globals) {
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		v.report(&units.Error{File: p, Msg: "no such file or directory", Err: units.ErrFile})
		return
	}
	fi, err := os.Stat(p)
	switch {
	case err == nil && fi.IsDir():
		v.dir(p)
	case isConfigPath(p, g):
		v.loadConfig(p)
	default:
		if _, err := v.loader.Load(p); err != nil {
			v.report(err)
			return
		}
		v.files++
	}
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
	if es := d.Errors(); len(es) > 0 {
		v.report(es)
	}
	v.units += len(d.Units)
}

func (v *validator) summary() string {
	n := v.units + v.files
	if n == 0 && v.config != "" {
		return "config " + v.config + " valid"
	}
	s := fmt.Sprintf("%d unit(s) valid", n)
	if v.config != "" {
		s += ", config " + v.config
	} else {
		s += ", no config file (defaults)"
	}
	return s
}
