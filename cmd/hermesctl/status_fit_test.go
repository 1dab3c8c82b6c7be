package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/creack/pty"
	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
)

// crowdedStatus is a status of many units with long names, long errors
// and descriptions, a daemonized unit, orphans, config errors, a job and
// a proxy: every part of the output that can be long.
func crowdedStatus() control.Status {
	st := control.Status{
		Daemon:       control.Daemon{PID: 4242, Role: "gateway", Started: time.Now().Add(-3 * time.Hour)},
		Supervisor:   control.Supervisor{PID: 4243, Groups: 40, Mode: "cgroup", Orphans: []int{9001, 9002, 9003, 9004, 9005}},
		ConfigErrors: []control.ConfigError{{File: "/home/someone/.config/hermes/units/broken-unit-with-a-long-name.yaml", Line: 12, Column: 7, Message: "unknown key \"comand\" (did you mean \"command\"?); fix the key and save the file again"}},
		Proxy:        &control.Proxy{Listen: "127.0.0.1:7411", Providers: []string{"local-reasoning", "openai", "anthropic", "mistral", "a-very-long-provider-name"}},
	}
	for i := range 40 {
		u := control.Unit{
			Name: fmt.Sprintf("unit-%02d", i), State: control.StateRunning, PID: 100000 + i, PGID: 100000 + i,
			Ownership: "persist_on_release", Ready: true, Uptime: time.Duration(i) * time.Hour, Restarts: i * 7,
			Ports: []int{8000 + i, 9000 + i, 10000 + i}, RSS: int64(i) << 22,
		}
		switch i % 4 {
		case 0:
			u.State = control.StateFailed
			u.Error = fmt.Sprintf("unit unit-%02d: spawn: working directory: stat /srv/some/deeply/nested/place/that/does/not/exist/%d: no such file or directory; restarting in 1.085s", i, i)
		case 1:
			u.Name = fmt.Sprintf("a-unit-whose-name-is-much-longer-than-a-column-%02d", i)
			u.Description = "a description that says at length what this unit is for and why it is there"
		case 2:
			u.Daemonized = 1
		}
		st.Units = append(st.Units, u)
	}
	return st
}

// rowOf says whether line is u's row: its first two columns are u's name
// and state, whole or cut with an ellipsis to at least 8 cells.
func rowOf(line string, u control.Unit) bool {
	f := strings.Fields(line)
	if len(f) < 2 {
		return false
	}
	is := func(got, want string) bool {
		if got == want {
			return true
		}
		short, cut := strings.CutSuffix(got, ellipsis)
		return cut && ansi.StringWidth(got) >= 8 && strings.HasPrefix(want, short)
	}
	return is(f[0], u.Name) && is(f[1], strings.Fields(string(u.State))[0])
}

// TestStatusFitsWidth: at a terminal's width every line of status fits
// (the table cut and thinned, the other lines cut), and each unit's row
// still starts with its name and state; --full (width 0) keeps every text
// whole. It failed when the table was ~220 columns wide at any width.
func TestStatusFitsWidth(t *testing.T) {
	st := crowdedStatus()
	for _, width := range []int{80, 200, 40} {
		for _, color := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d columns, colour %v", width, color), func(t *testing.T) {
				var b strings.Builder
				writeStatus(&b, st, look{color: color, width: width, now: time.Now()})
				out := b.String()
				for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
					if got := ansi.StringWidth(line); got > width {
						t.Errorf("line of %d cells, want at most %d: %q", got, width, line)
					}
				}
				if width < 80 {
					return // a row of 40 cells may cut even NAME and STATE to 8
				}
				lines := strings.Split(ansi.Strip(out), "\n")
				for _, u := range st.Units {
					if !slices.ContainsFunc(lines, func(line string) bool { return rowOf(line, u) }) {
						t.Errorf("no row starting with %s's name and state in:\n%s", u.Name, out)
					}
				}
				if width >= 80 && !strings.Contains(out, "ERROR") {
					t.Errorf("the ERROR column is gone at %d columns:\n%s", width, out)
				}
			})
		}
	}
	t.Run("wider shows more", func(t *testing.T) {
		var narrow, wide strings.Builder
		writeStatus(&narrow, st, look{width: 80})
		writeStatus(&wide, st, look{width: 200})
		for _, head := range []string{"PID", "UPTIME", "OWNERSHIP"} {
			if !strings.Contains(wide.String(), head) {
				t.Errorf("no %s column at 200 columns:\n%s", head, wide.String())
			}
		}
		if len(wide.String()) <= len(narrow.String()) {
			t.Errorf("200 columns show %d bytes, 80 show %d: want more", len(wide.String()), len(narrow.String()))
		}
	})
	t.Run("full", func(t *testing.T) {
		var b strings.Builder
		writeStatus(&b, st, look{})
		out := b.String()
		if strings.Contains(out, ellipsis) {
			t.Errorf("--full output has a cut text:\n%s", out)
		}
		for _, u := range st.Units {
			for _, text := range []string{u.Name, u.Error, u.Description, "persist_on_release", "running (daemonized, no main pid)"} {
				if !strings.Contains(out, text) {
					t.Errorf("--full output lacks %q", text)
				}
			}
		}
		for _, e := range st.ConfigErrors {
			if !strings.Contains(out, e.String()) {
				t.Errorf("--full output lacks the config error %q", e)
			}
		}
	})
}

// TestFitColumns: the columns' widths as they give way, step by step.
func TestFitColumns(t *testing.T) {
	cols := []column{{soft: 6, least: 3, grow: 1}, {drop: 2}, {drop: 1}, {soft: 10, least: 4, grow: 2}}
	natural := []int{8, 5, 5, 30}
	for _, tc := range []struct {
		width int
		want  []int
	}{
		{0, natural},
		{200, natural},
		{40, []int{8, 5, 5, 16}}, // the long text cut: 8+5+5+16+6
		{30, []int{8, 5, 0, 13}}, // the first column dropped
		{20, []int{8, 0, 0, 10}}, // both dropped
		{14, []int{8, 0, 0, 4}},  // cut to least (3, 4), the room back by grow: the first first
		{5, []int{3, 0, 0, 4}},   // the narrowest form, wider than the width: fitLines cuts
	} {
		t.Run(fmt.Sprint(tc.width), func(t *testing.T) {
			got := fitColumns(natural, cols, tc.width)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("fitColumns(%v, %d) = %v, want %v", natural, tc.width, got, tc.want)
			}
		})
	}
}

// TestOutputWidth: COLUMNS wins wherever the output goes; then a
// terminal's size; no limit through a pipe; --full lifts any limit.
func TestOutputWidth(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal to measure (%v)", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 24, Cols: 123}); err != nil {
		t.Fatal(err)
	}
	_, w := testkit.Pipe(t)
	for _, tc := range []struct {
		name    string
		columns string
		out     io.Writer
		full    bool
		want    int
	}{
		{"terminal", "", tty, false, 123},
		{"pipe", "", w, false, 0},
		{"buffer", "", &strings.Builder{}, false, 0},
		{"COLUMNS on a pipe", "90", w, false, 90},
		{"COLUMNS on a terminal", "70", tty, false, 70},
		{"COLUMNS not a number", "wide", tty, false, 123},
		{"--full on a terminal", "", tty, true, 0},
		{"--full with COLUMNS", "90", w, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("COLUMNS", tc.columns)
			opts := &statusOptions{full: tc.full}
			opts.out = tc.out
			if got := opts.look(time.Time{}).width; got != tc.want {
				t.Errorf("width = %d, want %d", got, tc.want)
			}
		})
	}
}
