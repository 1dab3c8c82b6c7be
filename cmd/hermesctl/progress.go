package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// progress shows what the unit a start waits for is doing. On a terminal
// it is one line, redrawn in place (the unit, what it does or waits for,
// the time since the action was sent) and erased once the wait ends, so
// that the outcome's line takes its place. Elsewhere (a pipe, a file, a
// CI log) it is a plain line each time what the unit does changes. Only
// waiter.wait, on the command's goroutine, calls it.
type progress struct {
	w     io.Writer
	tty   bool
	width int // the terminal's columns; lines are cut to fit, so that \r returns to their start

	unit, doing string
	began       time.Time
	drawn       bool // a line is on the terminal
}

// newProgress shows progress on w; nil w shows none (-o json).
func newProgress(w io.Writer) *progress {
	if w == nil {
		return &progress{w: io.Discard}
	}
	p := &progress{w: w, tty: isTerminal(w) && os.Getenv("TERM") != "dumb", width: 80}
	if f, ok := w.(*os.File); ok && p.tty {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			p.width = int(ws.Col)
		}
	}
	return p
}

// set says what unit is doing, waited for since began.
func (p *progress) set(unit, doing string, began time.Time) {
	changed := unit != p.unit || doing != p.doing
	p.unit, p.doing, p.began = unit, doing, began
	if p.tty {
		p.draw()
		return
	}
	if changed {
		fmt.Fprintf(p.w, "%s: %s (%s)\n", inert(unit), inert(doing), elapsed(time.Since(began)))
	}
}

// draw redraws the line with the time elapsed now (a terminal only).
func (p *progress) draw() {
	if !p.tty || p.unit == "" {
		return
	}
	line := fmt.Sprintf("%s: %s · %s", p.unit, p.doing, elapsed(time.Since(p.began)))
	line = strings.NewReplacer("\n", " ", "\t", " ").Replace(inert(line))
	if room := p.width - 1; utf8.RuneCountInString(line) > room {
		line = string([]rune(line)[:room-1]) + "…"
	}
	fmt.Fprint(p.w, "\r\x1b[K"+line)
	p.drawn = true
}

// clear erases the line from the terminal; the next set starts afresh.
func (p *progress) clear() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = false
	}
	p.unit, p.doing = "", ""
}
