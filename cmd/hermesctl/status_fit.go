package main

import (
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"golang.org/x/sys/unix"
)

// How wide status prints. A person reads it in a terminal of some width;
// a script reads it through a pipe and wants the same text whatever the
// window it runs in. So, as systemctl does: the COLUMNS variable, when set
// to a number, is the width wherever the output goes (a test, or a user
// who wants a pipe cut, sets it); otherwise the width is the terminal's
// when stdout is one (80 when the terminal does not say), and there is no
// limit when stdout is not a terminal. --full (-l) lifts the limit.
//
// Within the width, the unit table gives way first (fitColumns: its long
// texts cut with an ellipsis, then its least useful columns dropped), and
// every line of the output is then cut to the width (fitLines), so that a
// terminal never wraps one.

// outputWidth is the width status fits its output to on w, 0 for none.
func outputWidth(w io.Writer) int {
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	f, ok := w.(*os.File)
	if !ok || !isTerminal(f) {
		return 0
	}
	if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
		return int(ws.Col)
	}
	return 80
}

// ellipsis ends a text cut to fit.
const ellipsis = "…"

// ellipsize is s in at most width cells, ending with an ellipsis when it was cut;
// escape sequences (colour) are kept and count for nothing.
func ellipsize(s string, width int) string {
	if cells(s) <= width {
		return s
	}
	if width <= 0 {
		return ""
	}
	return ansi.Truncate(s, width, ellipsis)
}

// cells is the width of s on a terminal: its length when it is
// printable ASCII, as most texts of status are, else as ansi measures
// it (escape sequences count for nothing, wide characters for two).
func cells(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return ansi.StringWidth(s)
		}
	}
	return len(s)
}

// fitLines writes text to w, each line cut to width cells (none when width
// is 0). A line of at most width bytes fits as it is: no character takes
// more cells than bytes.
func fitLines(w io.Writer, text string, width int) {
	if width <= 0 {
		io.WriteString(w, text)
		return
	}
	var b strings.Builder
	b.Grow(len(text))
	for line := range strings.SplitAfterSeq(text, "\n") {
		body, nl := strings.CutSuffix(line, "\n")
		if len(body) > width {
			body = ellipsize(body, width)
		}
		b.WriteString(body)
		if nl {
			b.WriteByte('\n')
		}
	}
	io.WriteString(w, b.String())
}

// column says how a column of a table gives way when the table is wider
// than the output. A column with soft > 0 is cut (with an ellipsis) down
// to soft cells before any column is dropped, and down to least cells once
// every column that can go is gone; the room left after that goes back to
// the cut columns by grow, lowest first. drop ranks the columns dropped
// whole, lowest first; 0: never dropped.
type column struct {
	soft, least int
	grow        int
	drop        int
}

// fitColumns is the width of each column of a table whose columns are
// natural cells wide, so that its rows, two spaces between columns, fit in
// width cells: 0 for a dropped column. width 0 is no limit. When even the
// narrowest form does not fit, it returns that form, and fitLines cuts the
// lines.
func fitColumns(natural []int, cols []column, width int) []int {
	if width <= 0 || span(natural) <= width {
		return natural
	}
	var ranks []int
	for _, c := range cols {
		if c.drop > 0 {
			ranks = append(ranks, c.drop)
		}
	}
	slices.Sort(ranks)
	ranks = slices.Compact(ranks)
	soft := func(c column) int { return c.soft }
	for k := 0; k <= len(ranks); k++ {
		gone := 0
		if k > 0 {
			gone = ranks[k-1]
		}
		if w, ok := placeColumns(natural, cols, width, gone, soft); ok {
			return w
		}
	}
	last := 0
	if len(ranks) > 0 {
		last = ranks[len(ranks)-1]
	}
	w, _ := placeColumns(natural, cols, width, last, func(c column) int { return c.least })
	return w
}

// placeColumns lays the columns out in width with the columns of drop
// rank ≤ gone dropped and each cut column at floor's width; ok says
// whether they fit.
func placeColumns(natural []int, cols []column, width, gone int, floor func(column) int) (w []int, ok bool) {
	w = make([]int, len(natural))
	for i, n := range natural {
		if cols[i].drop > 0 && cols[i].drop <= gone {
			continue
		}
		w[i] = n
		if f := floor(cols[i]); f > 0 {
			w[i] = min(n, f)
		}
	}
	used := span(w)
	if used > width {
		return w, false
	}
	order := make([]int, 0, len(cols))
	for i := range cols {
		if w[i] > 0 && w[i] < natural[i] {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cols[a].grow - cols[b].grow })
	for _, i := range order {
		more := min(natural[i]-w[i], width-used)
		w[i] += more
		used += more
	}
	return w, true
}

// span is the width of a row whose columns are w cells wide (0: dropped),
// two spaces apart.
func span(w []int) int {
	n, cols := 0, 0
	for _, c := range w {
		if c > 0 {
			n += c
			cols++
		}
	}
	if cols > 1 {
		n += 2 * (cols - 1)
	}
	return n
}
