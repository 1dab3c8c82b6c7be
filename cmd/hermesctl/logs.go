package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/internal/logfile"
	"github.com/hermes-units/hermes/internal/paths"
	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/units"
	"github.com/spf13/cobra"
)

// logsOptions are the flags and arguments of logs, and where it prints.
type logsOptions struct {
	clientOptions
	units          []string
	follow, stamps bool          // -f, -t
	lines          int           // -n
	since          time.Duration // --since; 0: no bound
}

func newLogsCmd(g *globals) *cobra.Command {
	opts := &logsOptions{clientOptions: clientOptions{g: g}}
	cmd := opts.unitsCommand(&cobra.Command{
		Use:   "logs UNIT...",
		Short: "Print units' logs (-f to follow them); works without hermesd",
		Long: `Print the last lines of a unit's log. hermesd says where the log is and
hermesctl reads the file itself; when hermesd is not running (or was killed
and its survivors write on), hermesctl finds the file itself: the ledger of
the state directory, else the unit's log.path, else STATE/logs/UNIT.log.
-f keeps printing what is appended, across rotations, until interrupted.
-n -1 prints the whole file.

Several units are interleaved by time, each line after its unit's name.
-t puts each line's time before it, and --since 10m prints only what was
written in the last ten minutes (rotated files included).

Units write their log files directly (no pipe through hermesd, so that a
survivor outlives it), so a line has no time but the one it carries: a
line that starts with a timestamp (RFC 3339, "2006-01-02 15:04:05",
"2006/01/02 15:04:05", logfmt time=, JSON "time":) has that time; a line
without one has the time of the dated line before it in the same file; a
line read while following has the time it was read at. Lines before the
first dated line of a file have no known time: -t shows "-", --since keeps
them only when the file was written to since then, and they sort with the
first dated line after them.`,
		Args: cobra.MinimumNArgs(1),
	}, &opts.units, func(ctx context.Context) error { return runLogs(ctx, opts) })
	cmd.Flags().BoolVarP(&opts.follow, "follow", "f", false, "keep printing what is appended")
	cmd.Flags().IntVarP(&opts.lines, "lines", "n", 10, "print the last N lines (-1: all)")
	cmd.Flags().BoolVarP(&opts.stamps, "timestamps", "t", false, "put each line's time before it")
	cmd.Flags().DurationVar(&opts.since, "since", 0, "print only lines written in this last while (e.g. 10m, 2h)")
	return cmd
}

// runLogs prints the units' logs: one unit's as its file has it (Tail),
// several interleaved by time, or with -t or --since each line dated
// (printLogs). -f follows until ctx ends or an interrupt (exit 0 then).
func runLogs(ctx context.Context, opts *logsOptions) error {
	if opts.since < 0 {
		return &exitError{code: exitcode.Usage, err: fmt.Errorf("logs: --since %v is negative; give how far back, e.g. --since 10m", opts.since)}
	}
	files, err := logFiles(ctx, opts)
	if err != nil {
		return err
	}
	// An interrupt ends -f cleanly, with exit status 0.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(files) == 1 && !opts.stamps && opts.since == 0 {
		f := files[0]
		err = logfile.Tail(ctx, f.path, opts.lines, opts.follow, opts.out)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("logs %s: no log yet at %s (the unit has not written anything)", f.unit, f.path)
		}
		if err != nil {
			return fmt.Errorf("logs %s: %w", f.unit, err)
		}
		return nil
	}
	lo := logOptions{lines: opts.lines, stamps: opts.stamps, names: len(files) > 1, follow: opts.follow}
	if opts.since > 0 {
		lo.since = time.Now().Add(-opts.since)
	}
	return printLogs(ctx, opts.out, opts.errOut, files, lo)
}

// unitLog is one unit's log file.
type unitLog struct {
	unit, path string
}

// logFiles finds the log file of each unit: hermesd says where it is; when
// hermesd is not running, logFile finds it offline (one note on stderr).
func logFiles(ctx context.Context, opts *logsOptions) ([]unitLog, error) {
	g, names := opts.g, opts.units
	c, err := dial(g)
	if err != nil && !errors.Is(err, control.ErrNotRunning) {
		return nil, err
	}
	var out []unitLog
	if c != nil {
		defer c.Close()
		for _, unit := range names {
			path, err := c.LogPath(ctx, unit)
			if errors.Is(err, control.ErrNotRunning) {
				c.Close()
				c = nil
				break
			}
			if err != nil {
				return nil, unitError("logs", unit, 0, err)
			}
			out = append(out, unitLog{unit, path})
		}
		if c != nil {
			return out, nil
		}
	}
	out = out[:0]
	off := offlineLogs{g: g}
	for _, unit := range names {
		path, err := off.path(ctx, unit)
		if err != nil {
			return nil, err
		}
		out = append(out, unitLog{unit, path})
	}
	fmt.Fprintf(opts.errOut, "hermesctl: hermesd is not running (no answer on %s): reading the log files of %s directly\n", g.Socket, g.State)
	return out, nil
}

// offlineLogs finds unit log files without hermesd, in the order that
// holds the most recent truth: the ledger of the state directory (a
// survivor's entry names the file it writes to), the unit's log.path in
// the units directory, else hermesd's default STATE/logs/UNIT.log.
type offlineLogs struct {
	g       *globals
	entries []ledger.Entry
	dir     *units.Dir
	loaded  bool
}

func (o *offlineLogs) path(ctx context.Context, unit string) (string, error) {
	if !o.loaded {
		o.loaded = true
		if _, err := os.Stat(filepath.Join(o.g.State, ledger.FileName)); err == nil {
			if l, err := ledger.Open(o.g.State); err == nil {
				o.entries, _ = l.Entries(ctx)
			}
		}
		if _, err := os.Stat(o.g.Units); err == nil {
			o.dir, _ = (&units.Loader{Insecure: true}).LoadDir(o.g.Units)
		}
	}
	var latest *ledger.Entry
	for i, e := range o.entries {
		if e.Unit == unit && e.Log != "" && (latest == nil || e.Spawned.After(latest.Spawned)) {
			latest = &o.entries[i]
		}
	}
	if latest != nil {
		return latest.Log, nil
	}
	if o.dir != nil {
		if s := o.dir.Units[unit]; s != nil && s.Log.Path != "" {
			return s.Log.Path, nil
		}
	}
	p := filepath.Join(paths.Logs(o.g.State), unit+".log")
	if _, err := os.Stat(p); err != nil && (o.dir == nil || o.dir.Units[unit] == nil) {
		return "", fmt.Errorf("logs %s: hermesd is not running and no unit %q is known: not in the ledger of %s, not in %s, and no %s; is --state (or --units) right?", unit, unit, o.g.State, o.g.Units, p)
	}
	return p, nil
}
