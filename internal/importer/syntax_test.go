package importer

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/units"
)

// TestShellLine runs the shell line an ExecStart= with variables becomes
// and checks the words the program receives are systemd's: ${A} one word,
// $B split on white space, quotes grouping, $$ a literal dollar.
func TestShellLine(t *testing.T) {
	tests := []struct {
		name, exec string
		want       []string
	}{
		{"braced var is one word", `/usr/bin/printf "%s|" ${A}`, []string{"1 2"}},
		{"bare var splits", `/usr/bin/printf "%s|" $B`, []string{"3", "4"}},
		{"var inside a word", `/usr/bin/printf "%s|" --port=${A}x`, []string{"--port=1 2x"}},
		{"quoted words and a literal dollar", `/usr/bin/printf "%s|" ${A} "x y" 'it''s' $$HOME a\"b`, []string{"1 2", "x y", "its", "$HOME", `a"b`}},
		{"backquote and backslash stay literal", "/usr/bin/printf \"%s|\" ${A} '`id`' 'a\\\\b'", []string{"1 2", "`id`", `a\b`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &sdConv{name: "x", n: &noter{list: new([]Note)}}
			v, _ := specifiers(tc.exec, "x")
			c.start = c.exec("Service.ExecStart", v, nil)
			c.command()
			if c.f.Shell == "" {
				t.Fatalf("no shell line for %q (command %q)", tc.exec, c.f.Command)
			}
			cmd := exec.CommandContext(t.Context(), "/bin/sh", "-c", c.f.Shell)
			cmd.Env = append(os.Environ(), "A=1 2", "B=3 4")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("sh -c %q: %v", c.f.Shell, err)
			}
			got := strings.Split(strings.TrimSuffix(string(out), "|"), "|")
			if !slices.Equal(got, tc.want) {
				t.Errorf("sh -c %q gave words %q, want %q", c.f.Shell, got, tc.want)
			}
		})
	}
}

func TestSplitWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{`a b  c`, []string{"a", "b", "c"}},
		{`"a b" 'c d'`, []string{"a b", "c d"}},
		{`a"b c"d`, []string{"ab cd"}},
		{`x\sy \x41 \101 \u00e9`, []string{"x y", "A", "A", "é"}},
		{`""`, []string{""}},
	}
	for _, tc := range tests {
		got, err := SplitWords(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("SplitWords(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := SplitWords(`"open`); !errors.Is(err, errQuote) {
		t.Errorf("SplitWords of an open quote: %v, want errQuote", err)
	}
}

func TestParseSpan(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		inf  bool
	}{
		{"90", 90 * time.Second, false},
		{"1min 30s", 90 * time.Second, false},
		{"1min30s", 90 * time.Second, false},
		{"500ms", 500 * time.Millisecond, false},
		{"2h", 2 * time.Hour, false},
		{"1.5s", 1500 * time.Millisecond, false},
		{"infinity", 0, true},
	}
	for _, tc := range tests {
		got, inf, err := parseSpan(tc.in)
		if err != nil || got != tc.want || inf != tc.inf {
			t.Errorf("parseSpan(%q) = %v, %v, %v; want %v, %v", tc.in, got, inf, err, tc.want, tc.inf)
		}
	}
	for _, bad := range []string{"", "ten", "5 parsecs", "s"} {
		if _, _, err := parseSpan(bad); !errors.Is(err, errSpan) {
			t.Errorf("parseSpan(%q): %v, want errSpan", bad, err)
		}
	}
}

// TestCronSchedule converts calendar expressions, and where systemd-analyze
// is installed checks that cron (units.ParseSchedule, what hermes runs
// jobs by) and systemd agree on the next runs.
func TestCronSchedule(t *testing.T) {
	tests := []struct{ in, want string }{
		{"daily", "0 0 * * *"},
		{"hourly", "0 * * * *"},
		{"weekly", "0 0 * * 1"},
		{"monthly", "0 0 1 * *"},
		{"Mon..Fri *-*-* 02:30:00", "30 2 * * 1-5"},
		{"Sat,Sun 10:00", "0 10 * * 0,6"},
		{"*-*-* *:0/15:00", "0-59/15 * * * *"},
		{"*-*-01,15 04:05", "5 4 1,15 * *"},
		{"*-01..03-* 12:00:00", "0 12 * 1-3 *"},
		{"*-*-* 06:00 UTC", "CRON_TZ=UTC 0 6 * * *"},
	}
	sa, _ := exec.LookPath("systemd-analyze")
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := cronSchedule(tc.in)
			if err != nil || got != tc.want {
				t.Fatalf("cronSchedule(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
			if sa == "" {
				t.Skip("systemd-analyze is not installed: the cross-check needs systemd's calendar parser")
			}
			checkAgainstSystemd(t, sa, tc.in, got)
		})
	}
	for _, bad := range []string{"*-*-* 00:00:30", "2027-*-* 00:00", "Mon *-*-01 00:00", "*-*~01 00:00", "Funday 00:00"} {
		if got, err := cronSchedule(bad); !errors.Is(err, errCalendar) {
			t.Errorf("cronSchedule(%q) = %q, %v; want errCalendar", bad, got, err)
		}
	}
}

// checkAgainstSystemd compares the next five runs of a calendar
// expression by systemd-analyze with those of its cron form.
func checkAgainstSystemd(t *testing.T, sa, cal, cron string) {
	t.Helper()
	sched, err := units.ParseSchedule(cron)
	if err != nil {
		t.Fatal(err)
	}
	var got []time.Time
	for _, at := range calendarTimes(t, sa, cal, 5) {
		ts, err := time.Parse("Mon 2006-01-02 15:04:05 MST", at)
		if err != nil {
			t.Fatalf("systemd-analyze time %q: %v", at, err)
		}
		got = append(got, ts)
	}
	if len(got) != 5 {
		t.Fatalf("systemd-analyze gave %d times for %q, want 5", len(got), cal)
	}
	// The times are in UTC, and a schedule without CRON_TZ runs in the
	// zone of the time it is asked about.
	at := got[0].Add(-time.Second)
	for i, want := range got {
		at = sched.Next(at)
		if !at.UTC().Equal(want) {
			t.Fatalf("run %d: cron %q at %v, systemd %q at %v", i+1, cron, at.UTC(), cal, want)
		}
	}
}

func TestParseModule(t *testing.T) {
	ok := []struct{ name, src string }{
		{"json", `{"apps": [{"name": "a", "n": 1.5, "t": true, "z": null}]}`},
		{"module.exports", "// c\nmodule.exports = {\n  apps: [{ name: 'a', n: 1.5, t: true, z: null, }, ],\n};\n"},
		{"export default", "export default { apps: [ { name: `a` } ] }"},
		{"comments everywhere", "/* a */ module /* b */ . exports = /* c */ { apps /* d */ : [] } // e"},
		{"empty lists", "module.exports = { apps: [ ], o: { }, a: [[], {}, ], }"},
	}
	for _, tc := range ok {
		v, err := parseModule(tc.src)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if _, has := v.(*jsObject).vals["apps"]; !has {
			t.Errorf("%s: no apps key", tc.name)
		}
	}
	bad := []struct{ name, src, want string }{
		{"require", "const x = require('x');\nmodule.exports = {}", "line 1"},
		{"process.env", "module.exports = { apps: [{ name: process.env.NAME }] }", "process is code"},
		{"template", "module.exports = { a: `x${y}` }", "${}"},
		{"spread", "module.exports = { ...base }", "spread"},
		{"call", "module.exports = { a: f() }", "f is code"},
		{"two statements", "module.exports = {}; console.log(1)", "more after"},
		{"deep", "module.exports = " + strings.Repeat("[", 100), "nested too deep"},
		{"array without a comma", "module.exports = { apps: [1 2] }", "want , or ]"},
		{"object without a comma", "module.exports = { apps: [], a: 1 b: 2 }", "want , or }"},
		{"unclosed object", "module.exports = { apps: [] ", "want , or }"},
	}
	for _, tc := range bad {
		_, err := parseModule(tc.src)
		if !errors.Is(err, errNotLiteral) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want errNotLiteral saying %q", tc.name, err, tc.want)
		}
	}
}

// TestPM2RefusesCode checks that a .config.js that computes its values is
// refused, not run, with the node command that turns it into JSON.
func TestPM2RefusesCode(t *testing.T) {
	src := Source{Path: "ecosystem.config.js", Data: []byte("module.exports = { apps: [{ name: 'a', script: 'a.js', env: { PORT: process.env.PORT } }] }")}
	_, err := Import(PM2, []Source{src})
	if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "node -e") {
		t.Errorf("Import: %v; want ErrSyntax naming node -e", err)
	}
}

func FuzzParseModule(f *testing.F) {
	for _, s := range []string{`{"a": [1, "x", true]}`, "module.exports = { a: 'b', }", "/* */ export default [`x`]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		_, _ = parseModule(src) // never panics, never loops
	})
}

func FuzzSplitWords(f *testing.F) {
	for _, s := range []string{`a "b c" 'd'`, `\x41\s\u00e9`, `"open`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		// systemd separates words by space, tab, CR and LF only.
		fields := strings.FieldsFunc(v, func(r rune) bool { return strings.ContainsRune(" \t\r\n", r) })
		words, err := SplitWords(v)
		if err == nil && !strings.ContainsAny(v, "\"'\\") && !slices.Equal(words, fields) {
			t.Errorf("SplitWords(%q) = %q, want the fields %q", v, words, fields)
		}
	})
}

func FuzzCronSchedule(f *testing.F) {
	for _, s := range []string{"daily", "Mon..Fri *-*-* 02:30:00", "*-*-* *:0/15:00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cal string) {
		cron, err := cronSchedule(cal)
		if err != nil {
			return
		}
		if _, err := units.ParseSchedule(cron); err != nil {
			t.Errorf("cronSchedule(%q) = %q, which hermes does not parse: %v", cal, cron, err)
		}
	})
}

// TestReloadKeys maps ExecReload= lines: `kill -SIG $MAINPID` to
// reload_signal:, a plain line to reload:, the rest to a shell line that
// reads MAINPID from the environment.
func TestReloadKeys(t *testing.T) {
	tests := []struct {
		name   string
		lines  []string
		signal string
		reload []string
	}{
		{"kill -HUP", []string{"/bin/kill -HUP $MAINPID"}, "HUP", nil},
		{"kill -s USR2", []string{"kill -s USR2 ${MAINPID}"}, "USR2", nil},
		{"kill --signal 1", []string{"/usr/bin/kill --signal 1 $MAINPID"}, "HUP", nil},
		{"plain", []string{"/usr/sbin/nginx -s reload"}, "", []string{"/usr/sbin/nginx", "-s", "reload"}},
		{"kill another pid", []string{"/bin/kill -HUP $OTHER"}, "", []string{"/bin/sh", "-c", "/bin/kill -HUP $OTHER"}},
		{"two lines", []string{"a 1", "-b 2"}, "", []string{"/bin/sh", "-c", "a 1 && { b 2 || true; }"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &sdConv{name: "x", n: &noter{list: new([]Note)}}
			for _, l := range tc.lines {
				c.reload = c.exec("Service.ExecReload", l, c.reload)
			}
			c.reloadKeys()
			var got []string
			for _, a := range c.f.Reload {
				got = append(got, string(a))
			}
			if string(c.f.ReloadSignal) != tc.signal || !slices.Equal(got, tc.reload) {
				t.Errorf("got reload_signal %q, reload %q; want %q, %q", c.f.ReloadSignal, got, tc.signal, tc.reload)
			}
		})
	}
}
