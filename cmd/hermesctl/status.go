package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// statusOptions are the flags and arguments of status, and where it
// prints.
type statusOptions struct {
	clientOptions
	units []string // none: every unit
	watch bool     // --watch
	full  bool     // --full: no cut to the terminal's width
}

func newStatusCmd(g *globals) *cobra.Command {
	opts := &statusOptions{clientOptions: clientOptions{g: g, unknownExit: exitcode.HermesctlUnknownUnit}}
	cmd := opts.unitsCommand(&cobra.Command{
		Use:   "status [UNIT...]",
		Short: "Show units, the supervisor, config errors, released and adopted groups",
		Long: "Show every unit (or the named ones): state, pid, pgid, ownership, readiness,\n" +
			"uptime (its process's age), restarts, ports, RSS, description (when units\n" +
			"have one) and last error; the death supervisor; unit files that did not load\n" +
			"(file:line:col); groups released, survivors re-adopted, and groups adopted\n" +
			"with `hermesctl adopt`.\n" +
			"-o json prints the stable JSON contract instead.\n\n" +
			"While hermesd is busy (starting or reloading many units), the answer may\n" +
			"show the units as they were up to a second before, never older than what\n" +
			"an earlier command's answer showed; RSS is refreshed in the background.\n\n" +
			"On a terminal the text fits its width: long texts are cut with an ellipsis\n" +
			"and the least useful columns left out (PGID first, then DESCRIPTION, RSS,\n" +
			"PORTS, READY, OWNERSHIP, RESTARTS, UPTIME, PID); --full shows everything.\n" +
			"COLUMNS, when set, is the width wherever the output goes; through a pipe\n" +
			"without it, nothing is cut.\n\n" +
			"Exit status, as LSB's and systemctl's (the same with -o json):\n" +
			"  0  every unit named is active (running, or adopted); with none named,\n" +
			"     every unit is active or at rest on purpose (stopped, disabled, a\n" +
			"     oneshot done, a program that exited 0 and is not restarted, a released\n" +
			"     group, a job waiting for its schedule, a unit waiting for one it\n" +
			"     requires that is stopped) and every unit file loaded\n" +
			"  1  no unit named, and unit files did not load (config errors); or\n" +
			"     status itself failed (no hermesd)\n" +
			"  3  a unit is not active (named), or is starting, stopping or failed (none\n" +
			"     named); a job whose last run failed is failed\n" +
			"  4  a unit named is unknown to hermesd (one whose file did not load is\n" +
			"     known: its state is error, with the file's file:line:col error)",
	}, &opts.units, func(ctx context.Context) error { return runStatus(ctx, opts) })
	cmd.Flags().BoolVarP(&opts.watch, "watch", "w", false, "redraw the table on each event (a unit changes, a reload, a cut…) until interrupted")
	cmd.Flags().BoolVarP(&opts.full, "full", "l", false, "show every column and every text whole, whatever the terminal's width")
	return cmd
}

// runStatus prints hermesd's status, for the units named or for all, and
// returns its verdict as the exit status (statusExit). With --watch it
// redraws the table until ctx ends (watchStatus).
func runStatus(ctx context.Context, opts *statusOptions) error {
	if opts.watch {
		err := watchStatus(ctx, opts)
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
	defer oneShot()()
	st, err := askStatus(ctx, opts.g, opts.units...)
	var ee *exitError
	switch {
	case errors.Is(err, control.ErrUnknownUnit):
		return &exitError{code: exitcode.HermesctlUnknownUnit, err: fmt.Errorf("status: %w", err)}
	case errors.Is(err, control.ErrNotRunning), errors.As(err, &ee):
		return err // as dial's: the refusal says it all
	case err != nil:
		return fmt.Errorf("status: %w", err)
	}
	lk := opts.look(time.Now())
	if err := show(opts.streams, st, func(w io.Writer, st control.Status) { writeStatus(w, st, lk) }); err != nil {
		return err
	}
	// The table (or JSON) has said what is wrong: the verdict is the
	// exit status alone, with nothing on stderr.
	if code := statusExit(st, len(opts.units) > 0); code != exitcode.Success {
		return &exitError{code: code}
	}
	return nil
}

// oneShotHeap bounds the heap of a command that leaves its garbage to
// its exit (oneShot): past it, the runtime collects as usual.
const oneShotHeap = 256 << 20

// oneShot turns garbage collection off, up to oneShotHeap, for a command
// that reads, decodes and prints in one go and exits: a status of 1000
// units leaves some 3 MB of garbage, and the collection it set off cost
// a tenth of the command's CPU. The func it returns turns it back on.
func oneShot() (restore func()) {
	gc := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(oneShotHeap)
	return func() {
		debug.SetMemoryLimit(limit)
		debug.SetGCPercent(gc)
	}
}

// look is how status draws: in colour or not, fitted to width cells (0:
// no limit), with the daemon's uptime as of now.
type look struct {
	color bool
	width int
	now   time.Time
}

// look is how opts draws on its output at now: a terminal's width (see
// outputWidth) unless --full.
func (opts *statusOptions) look(now time.Time) look {
	lk := look{color: colorFor(opts.out), now: now}
	if !opts.full {
		lk.width = outputWidth(opts.out)
	}
	return lk
}

// colorFor says whether w is a terminal that wants colour: NO_COLOR and
// TERM=dumb turn it off.
func colorFor(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	return err == nil
}

// ANSI colours of the state words.
const (
	green  = "\x1b[32m"
	red    = "\x1b[31m"
	yellow = "\x1b[33m"
	reset  = "\x1b[0m"
)

func stateColor(state control.UnitState) string {
	switch state {
	case control.StateRunning:
		return green
	case control.StateFailed, control.StateError:
		return red
	case control.StateStarting, control.StateStopping:
		return yellow
	}
	return ""
}

// writeStatus prints st for a human, as lk says.
func writeStatus(out io.Writer, st control.Status, lk look) {
	var b strings.Builder
	writeStatusLines(&b, st, lk)
	fitLines(out, b.String(), lk.width)
}

// writeStatusHeader writes the lines above the unit table: hermesd, its
// death supervisor, and what needs saying of the ledger, orphans, the
// first read of the units and a recovery.
func writeStatusHeader(w io.Writer, st control.Status, now time.Time) {
	if d := st.Daemon; d.PID != 0 {
		line := fmt.Sprintf("hermesd:    pid %d", d.PID)
		if d.Role != "" {
			line += ", role " + string(d.Role)
		}
		if !d.Started.IsZero() {
			line += ", up " + human(now.Sub(d.Started))
		}
		fmt.Fprintln(w, line)
	}
	s := st.Supervisor
	pid := "-"
	if s.PID != 0 {
		pid = strconv.Itoa(s.PID)
	}
	fmt.Fprintf(w, "supervisor: pid %s, %d %s, mode %s, health %s\n", pid, s.Groups, plural(s.Groups, "group", "groups"), dash(s.Mode), dash(s.Health.String()))
	if s.Ledger != "" {
		fmt.Fprintf(w, "ledger:     warning: %s\n", s.Ledger)
	}
	if len(s.Orphans) > 0 {
		groups := make([]string, len(s.Orphans))
		for i, g := range s.Orphans {
			groups[i] = strconv.Itoa(g)
		}
		fmt.Fprintf(w, "orphans:    %s %s: re-parented to hermesd, no unit's (nothing names one); they die with hermesd\n",
			plural(len(groups), "group", "groups"), strings.Join(groups, ", "))
	}
	if !st.Loading.IsZero() {
		fmt.Fprintf(w, "loading:    reading the units directory for %s; no unit is started before that read ends (a slow filesystem?)\n", human(now.Sub(st.Loading)))
	}
	if r := st.Recovery; r != nil {
		for _, e := range r.Ended {
			what := "ended"
			if e.Error != "" {
				what = "could not end: " + e.Error
			}
			fmt.Fprintf(w, "recovery:   %s: group %d (pid %d) left by dead hermesd %d, %s before the unit started again\n", e.Unit, e.PGID, e.PID, e.Owner, what)
		}
		if r.Leftovers > 0 {
			fmt.Fprintf(w, "recovery:   %d %s of dead owners still running; see `hermesctl adopt --orphans`\n", r.Leftovers, plural(r.Leftovers, "group", "groups"))
		}
	}
}

// writeStatusLines writes the lines of writeStatus, the unit table fitted
// to lk's width, the rest whole.
func writeStatusLines(w io.Writer, st control.Status, lk look) {
	writeStatusHeader(w, st, lk.now)
	fmt.Fprintln(w)

	switch {
	case len(st.Units) == 0 && !st.Loading.IsZero():
		fmt.Fprintln(w, "no units yet: the units directory is still being read")
	case len(st.Units) == 0:
		fmt.Fprintln(w, "no units")
	default:
		t, cols := unitTable(st.Units, lk.color)
		t.writeFit(w, "", cols, lk.width)
	}

	if len(st.ConfigErrors) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "config errors:")
		for _, e := range st.ConfigErrors {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
	// Adopted covers two cases that end differently: a survivor (adoptable,
	// persist_on_release) re-adopted from the ledger by a restarted gateway
	// was spawned to outlive hermesd and still does; a group taken with
	// `hermesctl adopt` (state "adopted", or recorded as owned) now dies
	// with hermesd.
	var released, readopted, adopted table
	for _, u := range st.Units {
		var sec *table
		switch {
		case u.State == control.StateReleased:
			sec = &released
		case u.State == control.StateAdopted || u.Adopted && !u.Ownership.Survivor():
			sec = &adopted
		case u.Adopted:
			sec = &readopted
		default:
			continue
		}
		*sec = append(*sec, []cell{{text: u.Name}, {text: "pgid " + num(u.PGID)}, {text: "pid " + num(u.PID)}})
	}
	for _, sec := range []struct {
		title string
		t     table
	}{
		{"released groups (they outlive hermesd):", released},
		{"re-adopted survivors (they outlive hermesd):", readopted},
		{"adopted groups (they now die with hermesd):", adopted},
	} {
		if len(sec.t) == 0 {
			continue
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, sec.title)
		sec.t.write(w, "  ")
	}
	writeOwned(w, st)
	writeJobsAndProxy(w, st)
}

// unitTable is the table of us, one row a unit, and how each of its
// columns gives way on a narrow terminal (see fitColumns): the long texts
// (ERROR, DESCRIPTION; NAME and STATE last) are cut; PGID goes first (it
// is the pid but for a forking unit's), then DESCRIPTION, RSS, PORTS,
// READY, OWNERSHIP, RESTARTS, UPTIME and PID. NAME, STATE and ERROR stay.
// Its DESCRIPTION column, before ERROR, is there only when a unit has a
// description: most have none, and an empty column would only widen the
// table.
func unitTable(us []control.Unit, color bool) (table, []column) {
	described := slices.ContainsFunc(us, func(u control.Unit) bool { return u.Description != "" })
	head := []cell{{text: "NAME"}, {text: "STATE"}, {text: "PID"}, {text: "PGID"}, {text: "OWNERSHIP"}, {text: "READY"}, {text: "UPTIME"}, {text: "RESTARTS"}, {text: "PORTS"}, {text: "RSS"}}
	cols := []column{
		{soft: 20, least: 8, grow: 1}, {soft: 10, least: 8, grow: 2}, {drop: 9}, {drop: 1}, {drop: 6},
		{drop: 5}, {drop: 8}, {drop: 7}, {drop: 4}, {drop: 3},
	}
	if described {
		head = append(head, cell{text: "DESCRIPTION"})
		cols = append(cols, column{soft: 16, least: 8, grow: 4, drop: 2})
	}
	head = append(head, cell{text: "ERROR"})
	cols = append(cols, column{soft: 24, least: 8, grow: 3})
	// The rows' cells in one allocation: a status of thousands of units
	// is printed by a command that runs for milliseconds.
	n := len(head)
	cells := make([]cell, len(us)*n)
	t := make(table, 1, 1+len(us))
	t[0] = head
	for k, u := range us {
		state := cell{text: dash(string(u.State))}
		switch {
		case u.Daemonized > 0 && u.State == control.StateRunning:
			state.text = "running (daemonized, no main pid)"
		case u.Masked && (u.State == control.StateStopped || u.State == control.StateDisabled || u.State == control.StateInactive):
			state.text = "masked" // kept stopped by `hermesctl mask`, whatever else holds it
		}
		if color {
			state.color = stateColor(u.State)
		}
		row := cells[k*n : (k+1)*n : (k+1)*n]
		row[0], row[1], row[2], row[3], row[4] = cell{text: u.Name}, state, cell{text: num(u.PID)}, cell{text: num(u.PGID)}, cell{text: dash(u.Ownership)}
		row[5], row[6], row[7], row[8], row[9] = cell{text: ready(u)}, cell{text: uptime(u.Uptime)}, cell{text: strconv.Itoa(u.Restarts)}, cell{text: ports(u.Ports)}, cell{text: size(u.RSS)}
		if described {
			row[10] = cell{text: dash(oneLine(u.Description))}
		}
		row[n-1] = cell{text: dash(oneLine(u.Error))}
		t = append(t, row)
	}
	return t, cols
}

// cell is one table cell; color, if set, wraps text without counting
// towards its width, which writeFit sets (cells).
type cell struct {
	text, color string
	width       int
}

// table is rows of cells, written left-aligned in columns two spaces apart.
type table [][]cell

// write prints t, each line after indent.
func (t table) write(w io.Writer, indent string) { t.writeFit(w, indent, nil, 0) }

// writeFit prints t, each line after indent, its columns fitted to width
// cells as cols say (fitColumns; nil cols or width 0: as wide as they are).
// A cut text ends with an ellipsis; a dropped column is left out.
// Each cell's width is measured once (cells).
func (t table) writeFit(w io.Writer, indent string, cols []column, width int) {
	var widths []int
	for _, row := range t {
		for i := range row {
			row[i].width = cells(row[i].text)
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], row[i].width)
		}
	}
	if cols != nil && width > 0 {
		widths = fitColumns(widths, cols, width-cells(indent))
	}
	var b []byte
	for _, row := range t {
		b = append(b[:0], indent...)
		pad := 0
		for i, c := range row {
			if widths[i] == 0 {
				continue
			}
			b = append(b, spaces(pad)...)
			text, cw := c.text, c.width
			if cw > widths[i] {
				text = ellipsize(text, widths[i])
				cw = cells(text)
			}
			if c.color != "" {
				b = append(append(append(b, c.color...), text...), reset...)
			} else {
				b = append(b, text...)
			}
			pad = widths[i] - cw + 2
		}
		b = append(b, '\n')
		w.Write(b)
	}
}

// blanks are the spaces that pad table cells.
var blanks = strings.Repeat(" ", 64)

// spaces is n spaces.
func spaces(n int) string {
	if n <= len(blanks) {
		return blanks[:n]
	}
	return strings.Repeat(" ", n)
}

func dash[T ~string](s T) string {
	if s == "" {
		return "-"
	}
	return string(s)
}

func num(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

func ready(u control.Unit) string {
	switch {
	case u.State != control.StateRunning:
		return "-"
	case u.Ready:
		return "yes"
	}
	return "no"
}

func uptime(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return human(d)
}

// human is a duration to the precision a person reads: 42s, 3m12s, 2h05m, 3d04h.
func human(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	case d < time.Hour:
		return two(int(d.Minutes()), "m", int(d.Seconds())%60, "s")
	case d < 24*time.Hour:
		return two(int(d.Hours()), "h", int(d.Minutes())%60, "m")
	}
	return two(int(d.Hours())/24, "d", int(d.Hours())%24, "h")
}

// two is a, then b in two digits, each followed by its unit: 3m05s.
func two(a int, ua string, b int, ub string) string {
	buf := make([]byte, 0, 16)
	buf = append(strconv.AppendInt(buf, int64(a), 10), ua...)
	if b < 10 && b >= 0 {
		buf = append(buf, '0')
	}
	return string(append(strconv.AppendInt(buf, int64(b), 10), ub...))
}

func ports(ps []int) string {
	if len(ps) == 0 {
		return "-"
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ",")
}

// size is a byte count in binary units: 512B, 12.3M.
func size(n int64) string {
	if n <= 0 {
		return "-"
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 3 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f%c", v, "KMGT"[i])
}

// oneLine is s with each run of white space one space, and none at
// either end.
func oneLine(s string) string {
	if isOneLine(s) {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// isOneLine says, for ASCII text, whether oneLine would leave s as it is:
// no white space but single spaces between words. Other text is not.
func isOneLine(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf, c == '\t', c == '\n', c == '\v', c == '\f', c == '\r':
			return false
		case c == ' ' && (i == 0 || i == len(s)-1 || s[i-1] == ' '):
			return false
		}
	}
	return true
}
