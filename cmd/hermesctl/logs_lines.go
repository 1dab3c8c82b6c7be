package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hermes-units/hermes/internal/logfile"
)

// logOptions are how printLogs prints.
type logOptions struct {
	lines  int            // the last N lines (of the merged, filtered output); < 0: all
	since  time.Time      // zero: no bound
	until  time.Time      // zero: no bound
	grep   *regexp.Regexp // nil: every line
	stamps bool           // -t
	names  bool           // several units: each line after its unit's name
	json   bool           // -o json: one object a line
	follow bool
}

// filtered reports whether o keeps only some lines by their time or text,
// so that the whole files must be read.
func (o logOptions) filtered() bool {
	return !o.since.IsZero() || !o.until.IsZero() || o.grep != nil
}

// keep reports whether l passes o's filters.
func (o logOptions) keep(l logLine) bool {
	if !o.since.IsZero() && l.sortAt.Before(o.since) {
		return false
	}
	if !o.until.IsZero() && l.sortAt.After(o.until) {
		return false
	}
	return o.grep == nil || o.grep.MatchString(l.text)
}

// logLine is one line of a unit's log with the time it is known by.
type logLine struct {
	unit   string
	stream logfile.Stream // "" for a raw line (a unit writing its file directly)
	text   string
	at     time.Time // zero: unknown (a raw line before the first dated line of its file)
	// sortAt orders lines across files: at, or for an undated line the
	// time of the first dated line after it (else its file's mtime).
	sortAt time.Time
	// partial: a record whose line goes on in a later record (only while
	// following, which prints records as they come).
	partial bool
}

// maxLogRead bounds what printLogs reads of one file, rotated ones
// included: log.max_size is at most units.MaxLogSize, but a file grown
// while nothing rotated it may be larger.
const maxLogRead = 256 << 20

// printLogs prints the logs of files interleaved by time, with their
// times (-t) and unit names (several units), the lines that pass the
// filters (--since, --until, --grep; rotated files included), the last
// o.lines of them, then follows the files with -f.
func printLogs(ctx context.Context, w, errw io.Writer, files []unitLog, o logOptions) error {
	var all []logLine
	sizes := make([]int64, len(files))
	for i, f := range files {
		ls, size, err := readLog(f, o)
		if err != nil {
			return err
		}
		sizes[i] = size
		all = append(all, ls...)
	}
	slices.SortStableFunc(all, func(a, b logLine) int { return a.sortAt.Compare(b.sortAt) })
	all = slices.DeleteFunc(all, func(l logLine) bool { return !o.keep(l) })
	if o.lines >= 0 && len(all) > o.lines {
		all = all[len(all)-o.lines:]
	}
	bw := bufio.NewWriter(w)
	for _, l := range all {
		writeLogLine(bw, l, o)
	}
	if err := bw.Flush(); err != nil || !o.follow {
		return err
	}
	return followLogs(ctx, w, files, sizes, o)
}

// jsonLine is a line of logs -o json.
type jsonLine struct {
	Time    *time.Time `json:"time"` // null: not known
	Unit    string     `json:"unit"`
	Stream  string     `json:"stream"` // stdout, stderr, or "" (a unit writing its file directly)
	Text    string     `json:"text"`
	Partial bool       `json:"partial,omitempty"`
}

func writeLogLine(w io.Writer, l logLine, o logOptions) {
	if o.json {
		j := jsonLine{Unit: l.unit, Stream: string(l.stream), Text: l.text, Partial: l.partial}
		if !l.at.IsZero() {
			j.Time = &l.at
		}
		b, _ := json.Marshal(j) // a struct of strings, a time and a bool: no error
		w.Write(append(b, '\n'))
		return
	}
	var b strings.Builder
	if o.stamps {
		if l.at.IsZero() {
			b.WriteString(fmt.Sprintf("%-23s ", "-"))
		} else {
			b.WriteString(l.at.Local().Format("2006-01-02T15:04:05.000") + " ")
		}
	}
	if o.names {
		b.WriteString(l.unit + " | ")
	}
	b.WriteString(inert(l.text))
	b.WriteByte('\n')
	io.WriteString(w, b.String())
}

// readLog reads the lines of f's log file, and when o filters by time or
// text those of its rotated files (path.N … path.1) before them, and
// returns the current file's size (where following starts). Without
// filters it reads only the file's last o.lines lines.
func readLog(f unitLog, o logOptions) ([]logLine, int64, error) {
	var names []string
	if o.filtered() {
		for i := 1; i < 100; i++ {
			p := f.path + "." + strconv.Itoa(i)
			if _, err := os.Stat(p); err != nil {
				break
			}
			names = append([]string{p}, names...)
		}
	}
	names = append(names, f.path)
	// Some more raw lines than asked for: records of a line cut in pieces
	// join into one (printLogs keeps the last o.lines after that).
	last := o.lines
	if last > 0 {
		last = 2*last + 64
	}
	if o.filtered() {
		last = -1
	}
	var out []logLine
	var size int64
	for _, p := range names {
		b, end, mtime, err := readBounded(p, last)
		if errors.Is(err, fs.ErrNotExist) && p == f.path {
			if len(names) == 1 {
				return nil, 0, fmt.Errorf("logs %s: no log yet at %s (the unit has not written anything)", f.unit, f.path)
			}
			continue
		}
		if err != nil {
			return nil, 0, fmt.Errorf("logs %s: %w", f.unit, err)
		}
		if p == f.path {
			size = end
		}
		out = append(out, dateLines(f.unit, b, mtime)...)
	}
	return out, size, nil
}

// readBounded reads the file at path from the start of its last n lines
// (n < 0: all of it, up to maxLogRead bytes), and returns its size then.
func readBounded(path string, n int) ([]byte, int64, time.Time, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, 0, time.Time{}, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, 0, time.Time{}, err
	}
	off := max(fi.Size()-maxLogRead, 0)
	if n >= 0 {
		if off, err = logfile.LastLinesOffset(fh, fi.Size(), n); err != nil {
			return nil, 0, time.Time{}, err
		}
	}
	b := make([]byte, fi.Size()-off)
	m, err := fh.ReadAt(b, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, time.Time{}, err
	}
	return b[:m], off + int64(m), fi.ModTime(), nil
}

// dateLines splits b into lines and gives each its time: a record's
// (hermesd's, logfile.Copy), else a raw line's own leading timestamp, else
// the previous dated line's; raw lines before the first dated one have
// none, and sort with the first dated line after them (or mtime). A
// partial record is joined with the rest of its line, the next record of
// its stream.
func dateLines(unit string, b []byte, mtime time.Time) []logLine {
	b = bytes.TrimSuffix(b, []byte("\n"))
	if len(b) == 0 {
		return nil
	}
	raw := strings.Split(string(b), "\n")
	out := make([]logLine, 0, len(raw))
	open := map[logfile.Stream]int{} // a stream's partial line, by index in out
	var last time.Time
	firstDated := -1
	for _, s := range raw {
		rec := logfile.ParseRecord(s)
		if rec.Stamped() {
			if i, ok := open[rec.Stream]; ok {
				out[i].text += rec.Text
				if !rec.Partial {
					delete(open, rec.Stream)
				}
				continue
			}
			last = rec.Time
		} else if t, ok := lineTime(s); ok {
			last = t
		}
		if firstDated < 0 && !last.IsZero() {
			firstDated = len(out)
		}
		if rec.Partial {
			open[rec.Stream] = len(out)
		}
		out = append(out, logLine{unit: unit, stream: rec.Stream, text: rec.Text, at: last, sortAt: last})
	}
	bound := mtime
	if firstDated >= 0 {
		bound = out[firstDated].at
	} else {
		firstDated = len(out)
	}
	for i := range firstDated {
		out[i].sortAt = bound
	}
	return out
}

// lineTime is the timestamp a log line starts with, in the forms programs
// commonly print: RFC 3339, "2006-01-02 15:04:05[.frac]" and Go's log
// "2006/01/02 15:04:05[.frac]" (local time), logfmt "time=…" and a JSON
// object whose first key is "time".
func lineTime(s string) (time.Time, bool) {
	s = strings.TrimLeft(s, "[")
	if v, ok := strings.CutPrefix(s, "time="); ok {
		s = strings.Trim(v, `"`)
	} else if v, ok := strings.CutPrefix(s, `{"time":"`); ok {
		s = v
	}
	if len(s) < 19 || s[0] < '0' || s[0] > '9' {
		return time.Time{}, false
	}
	first, rest, _ := strings.Cut(s, " ")
	first = strings.TrimRight(first, `",]`)
	if t, err := time.Parse(time.RFC3339Nano, first); err == nil {
		return t, true
	}
	second, _, _ := strings.Cut(rest, " ")
	second = strings.TrimRight(second, `",]`)
	for _, layout := range []string{"2006-01-02 15:04:05", "2006/01/02 15:04:05"} {
		if t, err := time.ParseInLocation(layout, first+" "+second, time.Local); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// followLogs prints what is appended to every file from sizes on, in the
// order it is read, that passes o's filters (followed). Rotation and
// replacement are followed (logfile.Lines).
func followLogs(ctx context.Context, w io.Writer, files []unitLog, sizes []int64, o logOptions) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type got struct {
		unit, text string
	}
	ch := make(chan got)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i, f := range files {
		lines, err := logfile.Lines(ctx, f.path, sizes[i])
		if err != nil {
			return fmt.Errorf("logs %s: %w", f.unit, err)
		}
		wg.Go(func() {
			for l := range lines {
				select {
				case ch <- got{f.unit, l}:
				case <-ctx.Done():
				}
			}
		})
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case g := <-ch:
			l := followed(g.unit, g.text)
			if !o.keep(l) {
				continue
			}
			var b bytes.Buffer
			writeLogLine(&b, l, o)
			if _, err := w.Write(b.Bytes()); err != nil {
				return err
			}
		}
	}
}

// followed is a line read while following: a record (printed as it comes,
// a partial one too), or a raw line timed by its own timestamp or else by
// when it was read.
func followed(unit, s string) logLine {
	rec := logfile.ParseRecord(s)
	at := rec.Time
	if !rec.Stamped() {
		var ok bool
		if at, ok = lineTime(s); !ok {
			at = time.Now()
		}
	}
	return logLine{unit: unit, stream: rec.Stream, text: rec.Text, at: at, sortAt: at, partial: rec.Partial}
}
