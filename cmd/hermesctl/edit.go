package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/internal/safefile"
	"github.com/hermes-units/hermes/units"
	"github.com/spf13/cobra"
)

// edit opens an editor on a copy of a unit file, checks the result as
// validate checks a file, and installs it in the units directory with one
// rename, as systemctl edit --full does: the running hermesd then reads it
// as it reads any save. The user's edit is never lost: a copy that does
// not validate (or an editor that fails) is kept where it was edited, and
// its path printed.

// editOptions are the flags and arguments of edit.
type editOptions struct {
	clientOptions
	unit  string
	force bool // --force: a unit with no file gets a new one
	euid  hermesdUID
}

func newEditCmd(g *globals) *cobra.Command {
	opts := &editOptions{clientOptions: clientOptions{g: g}}
	cmd := opts.command(&cobra.Command{
		Use:               "edit [--force] UNIT",
		Short:             "Edit a unit file in $EDITOR, check it, and install it atomically",
		Long:              editHelp,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeUnits(g),
	}, func(ctx context.Context, args []string) error {
		opts.unit = args[0]
		return runEdit(ctx, opts)
	})
	cmd.Flags().BoolVar(&opts.force, "force", false, "a unit with no file: start a new one from a template")
	return cmd
}

const editHelp = `Open $EDITOR (else $VISUAL, else vi) on a copy of the unit's file, in a
directory of its own under $TMPDIR; once the editor exits 0, check the copy
as ` + "`hermesctl validate FILE`" + ` does (with the units directory's other units),
then install it over the unit's file with one rename in the units
directory: a running hermesd reads it as any save, and restarts the unit
if the change needs it. A copy left unchanged installs nothing.

When the copy does not validate, or the editor fails, the unit's file is
left as it was, the errors are printed, and the copy is kept: its path is
printed, to fix it and copy it into place, or check it with validate.
Exit 1 then.

A unit with no file is an error, unless --force: a new file starts from a
template (as systemctl edit --force --full). The units directory is that
of the running hermesd, else --units, units: in the config, or the default.`

// unitTemplate is a new unit's file under --force.
const unitTemplate = `# %s: a unit of hermes units. Its keys: hermesctl's README (Unit files)
# or docs/reference.md. Save it with a command to install it.
description: ""
command: []
`

// runEdit edits opts.unit's file; see editHelp.
func runEdit(ctx context.Context, opts *editOptions) error {
	if !units.ValidName(opts.unit) {
		return &exitError{code: exitcode.Usage, err: fmt.Errorf("edit: %q is not a unit name (letters, digits and . _ @ -)", opts.unit)}
	}
	g := opts.g
	daemon := g.daemonPaths(ctx)
	v := &validator{loader: units.Loader{Unprivileged: opts.euid.unprivileged()}, note: opts.errOut}
	v.loadConfig(g.Config)
	v.errs = nil // the config's own errors are validate's to report, not edit's
	dir := v.unitsDir(g, daemon)
	target, old, err := editedFile(dir, opts.unit)
	switch {
	case errors.Is(err, fs.ErrNotExist) && opts.force:
		old = fmt.Appendf(nil, unitTemplate, opts.unit)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("edit: unit %s has no file in %s; `hermesctl edit --force %s` starts a new one", opts.unit, dir, opts.unit)
	case err != nil:
		return fmt.Errorf("edit: %w", err)
	}
	tmpDir, err := os.MkdirTemp("", "hermesctl-edit-")
	if err != nil {
		return fmt.Errorf("edit: %w", err)
	}
	copyPath := filepath.Join(tmpDir, filepath.Base(target))
	if err := os.WriteFile(copyPath, old, 0o600); err != nil {
		os.RemoveAll(tmpDir)
		return fmt.Errorf("edit: %w", err)
	}
	kept := func(err error) error {
		return fmt.Errorf("edit: %w; %s is unchanged, and your edit is kept in %s", err, target, copyPath)
	}
	if err := runEditor(ctx, opts.streams, copyPath); err != nil {
		return kept(err)
	}
	edited, err := os.ReadFile(copyPath)
	if err != nil {
		return kept(err)
	}
	if bytes.Equal(edited, old) {
		os.RemoveAll(tmpDir)
		fmt.Fprintf(opts.out, "unchanged %s: nothing installed\n", inert(opts.unit))
		return nil
	}
	v.overlay(g, daemon, []string{copyPath})
	if len(v.errs) > 0 {
		for _, e := range v.errs {
			fmt.Fprintln(opts.errOut, inert(e.Error()))
		}
		return &exitError{code: exitcode.Failure, err: kept(fmt.Errorf("%d error(s) (above): not installed", len(v.errs)))}
	}
	if err := install(target, edited); err != nil {
		return kept(err)
	}
	os.RemoveAll(tmpDir)
	fmt.Fprintf(opts.out, "installed %s\n", inert(target))
	return nil
}

// editedFile is the file of unit name in dir (NAME.yaml, else NAME.yml) and
// its content; a unit with neither is fs.ErrNotExist, with the .yaml path.
func editedFile(dir, name string) (string, []byte, error) {
	var first error
	for _, ext := range []string{".yaml", ".yml"} {
		p := filepath.Join(dir, name+ext)
		b, err := os.ReadFile(p)
		if err == nil {
			return p, b, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return p, nil, err
		}
		if first == nil {
			first = err
		}
	}
	return filepath.Join(dir, name+".yaml"), nil, first
}

// runEditor runs $EDITOR, else $VISUAL, else vi, on path, with the
// command's streams (a terminal), through /bin/sh as git and systemctl
// do, so that EDITOR may hold arguments ("code --wait").
func runEditor(ctx context.Context, s streams, path string) error {
	editor := os.Getenv("EDITOR")
	if editor == "" {
		editor = os.Getenv("VISUAL")
	}
	if editor == "" {
		editor = "vi"
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", editor+` "$1"`, "sh", path)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.in, s.out, s.errOut
	if f, ok := s.in.(*os.File); ok {
		cmd.Stdin = f // the terminal itself, not a copy through a pipe
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("editor %q: %w", editor, err)
	}
	return nil
}

// install replaces target with data at once: a temporary file in target's
// directory (a name no unit has), written, fsynced and given the old
// file's mode (0600 for a new one), renamed over target, and the directory
// fsynced. A reader (hermesd) sees the old file or the new one, never a
// part.
func install(target string, data []byte) error {
	mode := fs.FileMode(0o600)
	if fi, err := os.Stat(target); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := safefile.Replace(target, "."+filepath.Base(target)+".hermesctl-edit-*", data, mode); err != nil {
		return err
	}
	_ = safefile.SyncDir(filepath.Dir(target)) // the file is in place; only a power cut could undo it
	return nil
}
