package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/units"
)

// Unit arguments may be glob patterns, as systemctl's: `restart 'web-*'`
// restarts every unit whose name matches, with the shell's pattern rules
// (path.Match: *, ?, [a-z], \ to escape). Every command that takes unit
// names expands them here, before it does anything (clientOptions.
// unitsCommand); a literal name is kept as given, known or not, so that
// the command says what it says of an unknown unit. A unit name cannot
// hold *, ?, [ or \ (units.NameOf's rule), so an argument with one is a
// pattern.

// errNoMatch is a pattern that matches no unit. It matches
// control.ErrUnknownUnit, so that a command answers as it does for a name
// it does not know.
var errNoMatch = fmt.Errorf("matches no unit (%w)", control.ErrUnknownUnit)

// isPattern reports whether a unit argument is a glob pattern.
func isPattern(arg string) bool { return strings.ContainsAny(arg, `*?[\`) }

// unitNames lists the names patterns are matched against, and says where
// they come from, for the error of a pattern that matches none ("the
// units hermesd knows").
type unitNames func(ctx context.Context, g *globals) (names []string, where string, err error)

// expandUnits replaces each pattern among args by the names it matches,
// sorted, and keeps a literal name as it is; a name that comes twice is
// kept at its first place. names is called only when args hold a pattern.
// A pattern that matches nothing is an error naming it (errNoMatch); one
// that is malformed is a usage error.
func expandUnits(ctx context.Context, g *globals, args []string, names unitNames) ([]string, error) {
	if !slices.ContainsFunc(args, isPattern) {
		return dedupe(args), nil
	}
	known, where, err := names(ctx, g)
	if err != nil {
		return nil, err
	}
	slices.Sort(known)
	var out []string
	for _, a := range args {
		if !isPattern(a) {
			out = append(out, a)
			continue
		}
		n := len(out)
		for _, k := range known {
			ok, err := path.Match(a, k)
			if err != nil {
				return nil, &exitError{code: exitcode.Usage, err: fmt.Errorf("unit pattern %q: %w", a, err)}
			}
			if ok {
				out = append(out, k)
			}
		}
		if len(out) == n {
			return nil, fmt.Errorf("unit pattern %q %w among %s", a, errNoMatch, where)
		}
	}
	return dedupe(out), nil
}

// dedupe is names, each once, at its first place.
func dedupe(names []string) []string {
	seen := make(map[string]bool, len(names))
	out := names[:0:0]
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// daemonUnits are the units hermesd knows (its status: units, those whose
// file did not load, adopted and released groups); when no hermesd runs,
// the unit files of the units directory, so that a command that works
// without hermesd (logs) expands its patterns too, and one that needs
// hermesd says that it does not run.
func daemonUnits(ctx context.Context, g *globals) ([]string, string, error) {
	st, err := askStatus(ctx, g)
	if errors.Is(err, control.ErrNotRunning) {
		return fileUnits(ctx, g)
	}
	if err != nil {
		return nil, "", err
	}
	names := make([]string, 0, len(st.Units))
	for _, u := range st.Units {
		names = append(names, u.Name)
	}
	return dedupe(names), "the units hermesd knows (hermesctl status)", nil
}

// fileUnits are the units of the unit files in the units directory (that
// of the running hermesd, unless --units or HERMES_UNITS names one), those
// that do not load included.
func fileUnits(ctx context.Context, g *globals) ([]string, string, error) {
	g.daemonPaths(ctx)
	files, err := unitFiles(g.Units)
	if err != nil {
		return nil, "", err
	}
	names := make([]string, 0, len(files))
	for _, f := range files {
		names = append(names, f.name)
	}
	return dedupe(names), "the unit files of " + g.Units, nil
}

// unitFile is a unit file of a units directory.
type unitFile struct {
	name string // the unit's name: web
	path string // the file: /home/user/.config/hermes/units/web.yaml
}

// unitFiles lists the unit files of dir (units.IsUnitFile), sorted by
// name, whether they load or not. A unit defined twice (web.yaml and
// web.yml) has both files, in that order.
func unitFiles(dir string) ([]unitFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("cannot list the units directory: %w; is --units (or units: in hermes.yaml) right?", err)
	}
	var out []unitFile
	for _, e := range entries {
		if name, ok := units.NameOf(e.Name()); ok && !e.IsDir() {
			p := filepath.Join(dir, e.Name())
			if abs, err := filepath.Abs(p); err == nil {
				p = abs
			}
			out = append(out, unitFile{name: name, path: p})
		}
	}
	slices.SortStableFunc(out, func(a, b unitFile) int { return strings.Compare(a.name, b.name) })
	return out, nil
}
