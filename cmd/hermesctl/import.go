package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/internal/importer"
	"github.com/hermes-units/hermes/internal/systemdunit"
	"github.com/hermes-units/hermes/units"
	"github.com/spf13/cobra"
)

// importOptions are the flags and arguments of import, and where it
// prints.
type importOptions struct {
	clientOptions
	files    []string // the source files
	from     string   // --from; "" to tell by the file names
	dir      string   // --dir; "" for the units directory
	force    bool     // --force
	dryRun   bool     // --dry-run
	insecure bool     // --insecure-units
}

// importReport is import's -o json output.
type importReport struct {
	Dir    string        `json:"dir"`
	Files  []string      `json:"files"`
	Notes  []importNote  `json:"notes"`
	Errors []exportError `json:"errors"` // units written that do not load
}

type importNote struct {
	File string `json:"file"`
	Unit string `json:"unit,omitempty"`
	Key  string `json:"key"`
	Why  string `json:"why"`
}

func newImportCmd(g *globals) *cobra.Command {
	opts := &importOptions{clientOptions: clientOptions{g: g}}
	cmd := opts.command(&cobra.Command{
		Use:   "import FILE... [--from systemd|process-compose|pm2] [--dir DIR]",
		Short: "Write hermes units from systemd unit files, a process-compose.yaml or a PM2 ecosystem file",
		Long: `Convert the services you run today into hermes unit files, one NAME.yaml per
service, in the units directory (--units, or --dir).

  systemd          NAME.service files, each with its NAME.timer (OnCalendar= becomes schedule:)
  process-compose  a process-compose.yaml: every process, depends_on conditions, probes
  pm2              an ecosystem file: JSON, or a .config.js whose only statement is
                   module.exports = {...}. The module is parsed as a literal, never run: one
                   that computes its values (require, process.env) is refused with the node
                   command that writes it out as JSON.

The format is told by the file names (.service/.timer, .yaml/.yml,
.json/.js), or by --from. Every key that maps is mapped: command, working
directory, environment, restart policy and backoff, start limit,
dependencies and their conditions, readiness, timeouts, stop signal, log
file, schedule. Every key that does not map, or only in part, is printed
with its file, its key and why, and listed in the header comment of the
unit file it concerns: nothing is dropped silently. A dependency on a unit
that is neither imported nor in the directory is left out, and said.

The units written are then loaded as hermesd would load them; an error
there exits 1. Existing unit files are overwritten only with --force (then
nothing is written). A running hermesd picks the new files up by itself.

-o json prints {"dir", "files", "notes": [{"file", "unit", "key", "why"}],
"errors": [{"unit", "error"}]}.`,
		Args: cobra.MinimumNArgs(1),
	}, func(ctx context.Context, args []string) error {
		opts.files = args
		return runImport(ctx, opts)
	})
	f := cmd.Flags()
	f.StringVar(&opts.from, "from", "", "the files' format: systemd, process-compose or pm2 (default: told by the file names)")
	f.StringVar(&opts.dir, "dir", "", "directory to write the units to (default: the units directory)")
	f.BoolVar(&opts.force, "force", false, "overwrite unit files that exist")
	f.BoolVar(&opts.dryRun, "dry-run", false, "print the unit files instead of writing them")
	f.BoolVar(&opts.insecure, "insecure-units", false, "load unit files and directories that other users can write (unsafe)")
	_ = cmd.RegisterFlagCompletionFunc("from", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		var out []string
		for _, f := range importer.Formats {
			out = append(out, string(f))
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// runImport converts the files, writes the units (or prints them with
// --dry-run), reports every note, and loads what it wrote. Exit 2 for a
// bad --from or files of mixed formats, 1 when a file does not convert,
// a unit exists without --force, or a unit written does not load.
func runImport(ctx context.Context, opts *importOptions) error {
	format, srcs, err := importSources(opts)
	if err != nil {
		return err
	}
	res, err := importer.Import(format, srcs)
	if err != nil {
		return &exitError{code: exitcode.Failure, err: fmt.Errorf("import: %w", err)}
	}
	dir := opts.dir
	if dir == "" {
		opts.g.daemonPaths(ctx)
		dir = opts.g.Units
	}
	res.Resolve(func(name string) bool { return unitFileExists(dir, name) })
	files := make([]systemdunit.File, 0, len(res.Units))
	for _, u := range res.Units {
		b, err := importer.Render(u, res.NotesOf(u))
		if err != nil {
			return &exitError{code: exitcode.Failure, err: fmt.Errorf("import: %w", err)}
		}
		files = append(files, systemdunit.File{Name: u.Name + ".yaml", Content: b})
	}
	if opts.dryRun {
		if opts.json {
			return &exitError{code: exitcode.Usage, err: errors.New("import: --dry-run prints the unit files, which have no JSON form; leave out -o json")}
		}
		for _, f := range files {
			fmt.Fprintf(opts.out, "# %s\n%s\n", filepath.Join(dir, f.Name), f.Content)
		}
		printNotes(opts, res.Notes)
		return nil
	}
	if err := systemdunit.Write(dir, files, opts.force); err != nil {
		if errors.Is(err, systemdunit.ErrExists) {
			err = fmt.Errorf("%w (nothing was written)", err)
		}
		return &exitError{code: exitcode.Failure, err: fmt.Errorf("import: %w", err)}
	}
	rep := importReport{Dir: dir, Files: []string{}, Notes: []importNote{}, Errors: checkImported(dir, res, opts.insecure)}
	for _, f := range files {
		rep.Files = append(rep.Files, filepath.Join(dir, f.Name))
	}
	for _, n := range res.Notes {
		rep.Notes = append(rep.Notes, importNote(n))
	}
	if err := printImport(opts, rep, res.Notes); err != nil {
		return err
	}
	if n := len(rep.Errors); n > 0 {
		return &exitError{code: exitcode.Failure, err: fmt.Errorf("import: %d imported %s do not load (listed above); fix them, then hermesctl validate", n, plural(n, "unit", "units"))}
	}
	return nil
}

// importSources reads the files and settles their format: --from, else
// the one their names tell (all alike).
func importSources(opts *importOptions) (importer.Format, []importer.Source, error) {
	var format importer.Format
	if opts.from != "" {
		f, err := importer.ParseFormat(opts.from)
		if err != nil {
			return "", nil, &exitError{code: exitcode.Usage, err: fmt.Errorf("import: --from: %w", err)}
		}
		format = f
	}
	var srcs []importer.Source
	for _, p := range opts.files {
		if opts.from == "" {
			f, err := importer.Detect(p)
			if err != nil {
				return "", nil, &exitError{code: exitcode.Usage, err: fmt.Errorf("import: %w", err)}
			}
			if format != "" && f != format {
				return "", nil, &exitError{code: exitcode.Usage, err: fmt.Errorf("import: %s is a %s file and the others %s; import one format at a time", p, f, format)}
			}
			format = f
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return "", nil, &exitError{code: exitcode.Failure, err: fmt.Errorf("import: %w", err)}
		}
		srcs = append(srcs, importer.Source{Path: p, Data: b})
	}
	return format, srcs, nil
}

func unitFileExists(dir, name string) bool {
	for _, ext := range []string{".yaml", ".yml"} {
		if _, err := os.Stat(filepath.Join(dir, name+ext)); err == nil {
			return true
		}
	}
	return false
}

// checkImported loads dir as hermesd would and returns the errors of the
// units just imported.
func checkImported(dir string, res *importer.Result, insecure bool) []exportError {
	errs := []exportError{}
	d, err := (&units.Loader{Insecure: insecure}).LoadDir(dir)
	if err != nil {
		return append(errs, exportError{Unit: "", Error: err.Error()})
	}
	for _, u := range res.Units {
		if es, failed := d.Failed[u.Name]; failed {
			errs = append(errs, exportError{Unit: u.Name, Error: es.Error()})
		}
	}
	return errs
}

// printImport prints rep: as JSON, or the files written, the notes, the
// errors and the next step.
func printImport(opts *importOptions, rep importReport, notes []importer.Note) error {
	if opts.json {
		return writeJSON(opts.out, rep)
	}
	for _, f := range rep.Files {
		fmt.Fprintf(opts.out, "wrote %s\n", f)
	}
	printNotes(opts, notes)
	for _, e := range rep.Errors {
		fmt.Fprintf(opts.errOut, "hermesctl: import: unit %s: %s\n", e.Unit, e.Error)
	}
	if len(rep.Errors) == 0 {
		fmt.Fprintln(opts.out, "next: hermesctl reload --dry-run (a running hermesd reads the new files by itself)")
	}
	return nil
}

// printNotes lists every key not carried over, or only in part, one line
// each: file, key, why.
func printNotes(opts *importOptions, notes []importer.Note) {
	if len(notes) == 0 {
		return
	}
	fmt.Fprintf(opts.out, "not carried over, or only in part (%d %s; each unit file's header lists its own):\n", len(notes), plural(len(notes), "key", "keys"))
	for _, n := range notes {
		fmt.Fprintf(opts.out, "  %s\n", inert(strings.TrimSpace(n.String())))
	}
}
