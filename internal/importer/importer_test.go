package importer

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-units/hermes/units"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestImportFixtures")

// fixtures are the realistic source files of each format, under testdata.
var fixtures = []struct {
	format Format
	files  []string
	golden string
}{
	{Systemd, []string{"systemd/api.service", "systemd/db.service", "systemd/migrate.service", "systemd/backup.service", "systemd/backup.timer"}, "systemd.golden"},
	{ProcessCompose, []string{"process-compose/process-compose.yaml"}, "process-compose.golden"},
	{PM2, []string{"pm2/ecosystem.json"}, "pm2.golden"},
	{PM2, []string{"pm2/ecosystem.config.js"}, "pm2-js.golden"},
}

// fixedHome makes the specifiers of the systemd fixtures expand the same
// on every machine.
func fixedHome(t *testing.T) {
	t.Setenv("HOME", "/home/user")
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1000")
	for _, v := range []string{"XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"} {
		t.Setenv(v, "")
	}
}

func readSources(t *testing.T, files []string) []Source {
	t.Helper()
	var srcs []Source
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, Source{Path: f, Data: b})
	}
	return srcs
}

// writeUnits renders res into a new units directory and returns it.
func writeUnits(t *testing.T, res *Result) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "units")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, u := range res.Units {
		b, err := Render(u, res.NotesOf(u))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, u.Name+".yaml"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestImportFixtures imports a realistic file of each format, checks that
// the units it writes load with no error (what hermesctl validate and
// hermesd check), and compares the units and notes with the golden file
// (go test -run TestImportFixtures -update rewrites them).
func TestImportFixtures(t *testing.T) {
	fixedHome(t)
	for _, fx := range fixtures {
		t.Run(fx.golden, func(t *testing.T) {
			res, err := Import(fx.format, readSources(t, fx.files))
			if err != nil {
				t.Fatal(err)
			}
			dir := writeUnits(t, res)
			d, err := units.LoadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for name, es := range d.Failed {
				t.Errorf("imported unit %s does not load: %v", name, es)
			}
			if got, want := len(d.Units), len(res.Units); got != want {
				t.Errorf("%d units load, want %d", got, want)
			}
			var b strings.Builder
			for _, u := range res.Units {
				r, _ := Render(u, res.NotesOf(u))
				fmt.Fprintf(&b, "== %s.yaml\n%s\n", u.Name, r)
			}
			b.WriteString("== notes\n")
			for _, n := range res.Notes {
				fmt.Fprintln(&b, n)
			}
			golden := filepath.Join("testdata", fx.golden)
			if *update {
				if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if b.String() != string(want) {
				t.Errorf("import differs from %s (go test -run TestImportFixtures -update rewrites it):\n%s", golden, b.String())
			}
		})
	}
}

// TestPM2JSAndJSONAgree checks that the .config.js fixture, parsed as a
// literal, imports to the same units as the same file in JSON.
func TestPM2JSAndJSONAgree(t *testing.T) {
	js, err := Import(PM2, readSources(t, []string{"pm2/ecosystem.config.js"}))
	if err != nil {
		t.Fatal(err)
	}
	js2, err := Import(PM2, readSources(t, []string{"pm2/ecosystem.json"}))
	if err != nil {
		t.Fatal(err)
	}
	for i := range js.Units {
		a, _ := Render(js.Units[i], nil)
		b, _ := Render(js2.Units[i], nil)
		a = a[strings.IndexByte(string(a), '\n'):] // the header names the source
		b = b[strings.IndexByte(string(b), '\n'):]
		if string(a) != string(b) {
			t.Errorf("unit %s: .config.js gives\n%s\nJSON gives\n%s", js.Units[i].Name, a, b)
		}
	}
	if len(js.Notes) != len(js2.Notes) {
		t.Errorf("%d notes from .config.js, %d from JSON", len(js.Notes), len(js2.Notes))
	}
}

// TestEveryKeyAccounted checks, for each fixture, that every key the
// source sets is mapped or noted: the keys of the source that no note
// names are exactly those the converter maps (listed here per format),
// so a key added to a fixture with no mapping and no note fails.
func TestEveryKeyAccounted(t *testing.T) {
	fixedHome(t)
	res, err := Import(Systemd, readSources(t, fixtures[0].files))
	if err != nil {
		t.Fatal(err)
	}
	mapped := []string{"Unit.Description", "Unit.After", "Unit.StartLimitIntervalSec", "Unit.StartLimitBurst",
		"Service.Type", "Service.ExecStartPre", "Service.ExecStart", "Service.WorkingDirectory", "Service.Environment",
		"Service.Restart", "Service.RestartSec", "Service.RestartMaxDelaySec", "Service.TimeoutStopSec",
		"Service.WatchdogSec", "Service.KillSignal", "Service.StandardOutput", "Service.StandardError",
		"Service.PIDFile", "Service.RemainAfterExit", "Service.TimeoutStartSec", "Timer.Unit", "Timer.OnCalendar",
		"Service.User", "Service.EnvironmentFile", "Service.LimitNOFILE", "Service.MemoryMax", "Service.Nice",
		"Service.Group", "Service.SupplementaryGroups", "Service.UMask", "Service.LimitCORE", "Service.CPUWeight",
		"Service.CPUQuota", "Service.TasksMax", "Service.ExecReload"}
	for _, fx := range fixtures[0].files {
		b, _ := os.ReadFile(filepath.Join("testdata", fx))
		section := ""
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			switch {
			case line == "" || strings.HasPrefix(line, "#"):
			case strings.HasPrefix(line, "["):
				section = strings.Trim(line, "[]")
			default:
				key := section + "." + strings.TrimSpace(strings.SplitN(line, "=", 2)[0])
				noted := slices.ContainsFunc(res.Notes, func(n Note) bool { return n.File == fx && n.Key == key })
				if !noted && !slices.Contains(mapped, key) {
					t.Errorf("%s: %s is neither mapped nor noted", fx, key)
				}
			}
		}
	}
}
