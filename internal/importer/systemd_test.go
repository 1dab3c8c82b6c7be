package importer

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coreos/go-systemd/v22/unit"
	"github.com/hermes-units/hermes/internal/systemdunit"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/units"
)

// TestSystemdRoundTrip imports the systemd fixture, loads the units it
// wrote, exports them back with hermesctl export systemd's code, has
// `systemd-analyze verify --user` check the result, and checks that every
// option of the original that the import maps means the same in the
// export: type, command, directory, environment, restart policy and
// backoff, start limit, timeouts, stop signal, dependencies, pid file,
// log file, and the timer's run times (systemd-analyze calendar).
func TestSystemdRoundTrip(t *testing.T) {
	fixedHome(t)
	fx := fixtures[0]
	res, err := Import(Systemd, readSources(t, fx.files))
	if err != nil {
		t.Fatal(err)
	}
	d, err := units.LoadDir(writeUnits(t, res))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	var files []systemdunit.File
	for _, u := range res.Units {
		s := d.Units[u.Name]
		if s == nil {
			t.Fatalf("unit %s does not load: %v", u.Name, d.Failed[u.Name])
		}
		fs, err := systemdunit.Files(s, systemdunit.Options{StateDir: filepath.Join(out, "state")})
		if err != nil {
			t.Fatalf("export %s: %v", u.Name, err)
		}
		files = append(files, fs...)
	}
	if err := systemdunit.Write(out, files, false); err != nil {
		t.Fatal(err)
	}
	for _, u := range res.Units {
		t.Run(u.Name, func(t *testing.T) {
			orig := sdOptions(t, filepath.Join("testdata", "systemd", u.Name+".service"))
			exported := sdOptions(t, filepath.Join(out, u.Name+".service"))
			sameSemantics(t, u, orig, exported)
		})
	}
	t.Run("backup.timer", func(t *testing.T) {
		orig := sdOptions(t, filepath.Join("testdata", "systemd", "backup.timer"))
		exported := sdOptions(t, filepath.Join(out, "backup.timer"))
		sameCalendar(t, orig["Timer.OnCalendar"][0], exported["Timer.OnCalendar"][0])
	})
	verify(t, out, files)
}

// sdOptions reads a unit file into its options by Section.Name.
func sdOptions(t *testing.T, path string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := unit.DeserializeOptions(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, o := range opts {
		k := o.Section + "." + o.Name
		out[k] = append(out[k], o.Value)
	}
	return out
}

// sameSemantics compares the options the import maps, where the original
// sets them.
func sameSemantics(t *testing.T, u Unit, orig, exp map[string][]string) {
	t.Helper()
	home, _ := os.UserHomeDir()
	expand := func(v string) string {
		v, _ = specifiers(v, u.Name)
		v = strings.TrimPrefix(v, "-")
		if v == "~" || strings.HasPrefix(v, "~/") {
			v = home + v[1:]
		}
		return v
	}
	last := func(m map[string][]string, k string) string {
		if len(m[k]) == 0 {
			return "" // not exported
		}
		return m[k][len(m[k])-1]
	}
	for k := range orig {
		o := expand(last(orig, k))
		switch k {
		case "Service.Type":
			if u.File.Schedule != "" {
				continue // a job: the timer's service runs to its end in both
			}
			if got, want := typeClass(last(exp, k)), typeClass(o); got != want {
				t.Errorf("Type: exported %s, original %s", got, want)
			}
		case "Service.ExecStart":
			if u.File.Shell != "" {
				continue // checked by TestShellLine
			}
			got, _ := SplitWords(last(exp, k))
			want, _ := SplitWords(o)
			if !slices.Equal(got, want) {
				t.Errorf("ExecStart: exported %q, original %q", got, want)
			}
		case "Service.Environment":
			if got, want := envOf(exp[k]), envOf(orig[k]); !maps.Equal(got, want) {
				t.Errorf("Environment: exported %v, original %v", got, want)
			}
		case "Unit.After", "Unit.Requires":
			if got, want := services(exp[k]), services(orig[k]); !slices.Equal(got, want) {
				t.Errorf("%s: exported %v, original %v", k, got, want)
			}
		case "Service.TimeoutStartSec":
			sameSpan(t, k, o, last(exp, k))
		case "Service.RestartSec", "Service.RestartMaxDelaySec", "Service.TimeoutStopSec", "Service.WatchdogSec",
			"Service.RuntimeMaxSec", "Unit.StartLimitIntervalSec":
			sameSpan(t, k, o, last(exp, k))
		case "Service.KillSignal":
			if got, want := strings.TrimPrefix(last(exp, k), "SIG"), strings.TrimPrefix(o, "SIG"); got != want {
				t.Errorf("KillSignal: exported %s, original %s", got, want)
			}
		case "Service.EnvironmentFile":
			// the optional mark kept, the path expanded as hermes expands it
			for i, v := range orig[k] {
				if i >= len(exp[k]) || strings.HasPrefix(v, "-") != strings.HasPrefix(exp[k][i], "-") || expand(v) != expand(exp[k][i]) {
					t.Errorf("EnvironmentFile: exported %q, original %q", exp[k], orig[k])
					break
				}
			}
		case "Service.MemoryMax":
			a, aerr := units.ParseSize(strings.TrimSuffix(o, "B"))
			b, berr := units.ParseSize(last(exp, k))
			if aerr != nil || berr != nil || a != b {
				t.Errorf("MemoryMax: exported %s, original %s", last(exp, k), o)
			}
		case "Service.User", "Service.Group", "Service.SupplementaryGroups", "Service.UMask", "Service.Nice",
			"Service.CPUWeight", "Service.CPUQuota", "Service.TasksMax":
			if got := last(exp, k); got != o {
				t.Errorf("%s: exported %q, original %q", k, got, o)
			}
		case "Service.Restart", "Unit.StartLimitBurst", "Service.PIDFile", "Service.RemainAfterExit",
			"Service.WorkingDirectory", "Unit.Description", "Service.StandardOutput", "Service.StandardError":
			if got := expand(last(exp, k)); got != o {
				t.Errorf("%s: exported %q, original %q", k, got, o)
			}
		}
	}
	for k := range orig {
		if strings.HasPrefix(k, "Service.Limit") {
			if got, want := last(exp, k), expand(last(orig, k)); got != want {
				t.Errorf("%s: exported %q, original %q", k, got, want)
			}
		}
	}
	if _, ok := orig["Service.Restart"]; !ok {
		// systemd's default: no restart; the import writes restart: no.
		if got := last(exp, "Service.Restart"); got != "no" {
			t.Errorf("Restart: exported %s, original unset (no)", got)
		}
	}
}

func typeClass(v string) string {
	if v == "exec" || v == "" {
		return "simple"
	}
	return v
}

func envOf(lines []string) map[string]string {
	m := map[string]string{}
	for _, l := range lines {
		words, _ := SplitWords(l)
		for _, w := range words {
			k, v, _ := strings.Cut(w, "=")
			m[k] = v
		}
	}
	return m
}

func services(lines []string) []string {
	var out []string
	for _, l := range lines {
		for _, w := range strings.Fields(l) {
			if strings.HasSuffix(w, ".service") && !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
	}
	slices.Sort(out)
	return out
}

func sameSpan(t *testing.T, key, orig, exp string) {
	t.Helper()
	a, ai, err := parseSpan(orig)
	if err != nil {
		t.Fatalf("%s: original %q: %v", key, orig, err)
	}
	b, bi, err := parseSpan(exp)
	if err != nil {
		t.Fatalf("%s: exported %q: %v", key, exp, err)
	}
	if a != b || ai != bi {
		t.Errorf("%s: exported %s, original %s", key, exp, orig)
	}
}

// sameCalendar checks with systemd-analyze calendar that two OnCalendar=
// expressions elapse at the same next ten times.
func sameCalendar(t *testing.T, orig, exp string) {
	t.Helper()
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (Debian package systemd): the calendar check needs its parser")
	}
	got, want := calendarTimes(t, sa, exp, 10), calendarTimes(t, sa, orig, 10)
	if len(want) != 10 || !slices.Equal(got, want) {
		t.Errorf("OnCalendar: exported %q elapses at %v, original %q at %v", exp, got, orig, want)
	}
}

// verify runs systemd-analyze verify --user over the exported files. A
// program the fixture names that this machine lacks is the one finding
// allowed (verify checks that ExecStart= is executable).
func verify(t *testing.T, dir string, files []systemdunit.File) {
	t.Helper()
	var paths []string
	for _, f := range files {
		paths = append(paths, filepath.Join(dir, f.Name))
	}
	found, err := testkit.SystemdVerify(t, paths...)
	for _, line := range found {
		if missingProgram(line) {
			t.Logf("systemd-analyze verify: %s (not installed here)", line)
		} else {
			t.Errorf("systemd-analyze verify: %s", line)
		}
	}
	if out := strings.Join(found, "\n"); err != nil && !t.Failed() && !strings.Contains(out, "is not executable") {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// missingProgram reports verify's complaint about a program that is not
// on this machine.
func missingProgram(line string) bool {
	_, rest, ok := strings.Cut(line, "Command ")
	if !ok || !strings.Contains(rest, "is not executable") {
		return false
	}
	prog, _, _ := strings.Cut(rest, " ")
	_, err := os.Stat(prog)
	return os.IsNotExist(err)
}

// calendarTimes are the next n elapses of a calendar expression, in UTC,
// as systemd-analyze calendar prints them.
func calendarTimes(t *testing.T, sa, expr string, n int) []string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), sa, "calendar", fmt.Sprintf("--iterations=%d", n), expr)
	cmd.Env = append(os.Environ(), "TZ=UTC", "SYSTEMD_LOG_COLOR=0")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze calendar %q: %v\n%s", expr, err, b)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if _, at, ok := strings.Cut(line, "elapse: "); ok {
			out = append(out, strings.TrimSpace(at))
		} else if strings.Contains(line, "Iter. #") {
			_, at, _ := strings.Cut(line, ": ")
			out = append(out, strings.TrimSpace(at))
		}
	}
	return out
}
