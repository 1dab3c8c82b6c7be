package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hermes-units/hermes/internal/logfile"
)

// logOptions are how printLogs prints.
type logOptions struct {
	lines  int       // the last N lines (of the merged output); < 0: all
	since  time.Time // zero: no bound
	stamps bool      // -t
	names  bool      // several units: each line after its unit's name
	follow bool
}

// logLine is one line of a unit's log with the time it is known by.
type logLine struct {
	unit string
	text string
	at   time.Time // zero: unknown (before the first dated line of its file)
	// sortAt orders lines across files: at, or for an undated line the
	// time of the first dated line after it (else its file's mtime).
	sortAt time.Time
}

// maxLogRead bounds what printLogs reads of one file, rotated ones
// included: log.max_size is at most units.MaxLogSize, but a file grown
// while nothing rotated it may be larger.
const maxLogRead = 256 << 20

// printLogs prints the logs of files interleaved by time, with their
// times (-t) and unit names (several units), the lines of the last since
// (rotated files included) or the last lines, then follows them with -f.
func printLogs(ctx context.Context, w, errw io.Writer, files []unitLog, o logOptions) error {
	var all []logLine
	sizes := make([]int64, len(files))
	for i, f := range files {
		ls, size, err := readLog(f, !o.since.IsZero())
		if err != nil {
			return err
		}
		sizes[i] = size
		all = append(all, ls...)
	}
	slices.SortStableFunc(all, func(a, b logLine) int { return a.sortAt.Compare(b.sortAt) })
	if !o.since.IsZero() {
		all = slices.DeleteFunc(all, func(l logLine) bool { return l.sortAt.Before(o.since) })
	}
	if o.lines >= 0 && len(all) > o.lines && o.since.IsZero() {
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

func writeLogLine(w io.Writer, l logLine, o logOptions) {
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

// readLog reads the lines of f's log file, and with rotated those of its
// rotated files (path.N … path.1) before them, and returns the current
// file's size (where following starts).
func readLog(f unitLog, rotated bool) ([]logLine, int64, error) {
	var names []string
	if rotated {
		for i := 1; i < 100; i++ {
			p := f.path + "." + strconv.Itoa(i)
			if _, err := os.Stat(p); err != nil {
				break
			}
			names = append([]string{p}, names...)
		}
	}
	names = append(names, f.path)
	var out []logLine
	var size int64
	for _, p := range names {
		b, mtime, err := readBounded(p)
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
			size = int64(len(b))
		}
		out = append(out, dateLines(f.unit, b, mtime)...)
	}
	return out, size, nil
}

func readBounded(path string) ([]byte, time.Time, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, time.Time{}, err
	}
	off := max(fi.Size()-maxLogRead, 0)
	b := make([]byte, fi.Size()-off)
	n, err := fh.ReadAt(b, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, time.Time{}, err
	}
	return b[:n], fi.ModTime(), nil
}

// dateLines splits b into lines and gives each its time: its own leading
// timestamp, else the previous dated line's; lines before the first dated
// one have none, and sort with the first dated line after them (or mtime).
func dateLines(unit string, b []byte, mtime time.Time) []logLine {
	b = bytes.TrimSuffix(b, []byte("\n"))
	if len(b) == 0 {
		return nil
	}
	raw := strings.Split(string(b), "\n")
	out := make([]logLine, len(raw))
	var last time.Time
	firstDated := -1
	for i, s := range raw {
		if t, ok := lineTime(s); ok {
			last = t
			if firstDated < 0 {
				firstDated = i
			}
		}
		out[i] = logLine{unit: unit, text: s, at: last, sortAt: last}
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
// order it is read, each line timed by its own timestamp or else by when
// it was read. Rotation and replacement are followed (logfile.Lines).
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
			at, ok := lineTime(g.text)
			if !ok {
				at = time.Now()
			}
			var b bytes.Buffer
			writeLogLine(&b, logLine{unit: g.unit, text: g.text, at: at}, o)
			if _, err := w.Write(b.Bytes()); err != nil {
				return err
			}
		}
	}
}
