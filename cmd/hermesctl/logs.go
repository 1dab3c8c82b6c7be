package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/internal/paths"
	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/units"
	"github.com/spf13/cobra"
)

// logsOptions are the flags and arguments of logs, and where it prints.
type logsOptions struct {
	clientOptions
	units          []string
	follow, stamps bool   // -f, -t
	lines          int    // -n
	since, until   string // --since, --until: a time, or a duration back from now; "": no bound
	grep           string // --grep
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
-t puts each line's time before it. --since and --until keep the lines
of a while (rotated files included), --grep REGEXP (RE2 syntax) the lines
whose text matches, and -n the last N of what they keep. Each takes a
duration back from now (10m, 2h) or a time (2026-12-05T14:00:00Z,
"2026-12-05 14:00:00", 2026-12-05; local time unless it says). -o json
prints one object a line: time (null when not known), unit, stream
(stdout, stderr, or "" for a unit that writes its file directly) and text.

An owned unit's output goes through hermesd, which writes each line with
the time it read it and its stream (RFC 3339, UTC, microseconds: the log
file's lines read "2026-12-05T14:00:00.123456Z stdout text"); once its
group is released, a log relay that outlives hermesd writes them on the
same way. A survivor (adoptable, persist_on_release) writes its file
directly, so that it never writes into a pipe hermesd's death would
break, and so does every unit when hermesd runs with HERMES_LOG_STAMPS=0:
such lines have no time but the one they carry. Such a line that starts
with a
timestamp (RFC 3339, "2006-01-02 15:04:05", "2006/01/02 15:04:05", logfmt
time=, JSON "time":) has that time; one without has the time of the
dated line before it in the same file; one read while following has the
time it was read at. Lines before the first dated line of a file have no
known time: -t shows "-", --since keeps them only when the file was
written to since then, and they sort with the first dated line after them.`,
		Args: cobra.MinimumNArgs(1),
	}, &opts.units, func(ctx context.Context) error { return runLogs(ctx, opts) })
	cmd.Flags().BoolVarP(&opts.follow, "follow", "f", false, "keep printing what is appended")
	cmd.Flags().IntVarP(&opts.lines, "lines", "n", 10, "print the last N lines (-1: all)")
	cmd.Flags().BoolVarP(&opts.stamps, "timestamps", "t", false, "put each line's time before it")
	cmd.Flags().StringVar(&opts.since, "since", "", "print only lines from this time on (a time, or a while back: 10m, 2h)")
	cmd.Flags().StringVar(&opts.until, "until", "", "print only lines up to this time (a time, or a while back: 10m, 2h)")
	cmd.Flags().StringVar(&opts.grep, "grep", "", "print only lines whose text matches this regular expression")
	return cmd
}

// runLogs prints the units' logs, interleaved by time when several
// (printLogs). -f follows until ctx ends or an interrupt (exit 0 then).
func runLogs(ctx context.Context, opts *logsOptions) error {
	now := time.Now()
	asJSON, err := opts.g.jsonOutput()
	if err != nil {
		return err
	}
	lo := logOptions{lines: opts.lines, stamps: opts.stamps, names: len(opts.units) > 1, follow: opts.follow, json: asJSON}
	if lo.since, err = parseWhen("since", opts.since, now); err != nil {
		return err
	}
	if lo.until, err = parseWhen("until", opts.until, now); err != nil {
		return err
	}
	if opts.grep != "" {
		if lo.grep, err = regexp.Compile(opts.grep); err != nil {
			return &exitError{code: exitcode.Usage, err: fmt.Errorf("logs: --grep %q: %w", opts.grep, err)}
		}
	}
	files, err := logFiles(ctx, opts)
	if err != nil {
		return err
	}
	// An interrupt ends -f cleanly, with exit status 0.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return printLogs(ctx, opts.out, opts.errOut, files, lo)
}

// whenLayouts are the forms of a time --since and --until take, besides
// RFC 3339; in local time.
var whenLayouts = []string{"2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02 15:04", "2006-01-02"}

// parseWhen reads the value of --since or --until (flag): "" is no bound
// (the zero time), a duration is that long before now, else a time.
func parseWhen(flag, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		if d < 0 {
			return time.Time{}, &exitError{code: exitcode.Usage, err: fmt.Errorf("logs: --%s %v is negative; give how far back, e.g. --%s 10m", flag, d, flag)}
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	for _, layout := range whenLayouts {
		if t, err := time.ParseInLocation(layout, v, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, &exitError{code: exitcode.Usage, err: fmt.Errorf("logs: --%s %q is neither a duration (10m, 2h) nor a time (2026-12-05T14:00:00Z, \"2026-12-05 14:00:00\", 2026-12-05)", flag, v)}
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
