package systemdunit

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-systemd/v22/unit"
	"github.com/hermes-units/hermes/internal/importer"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/units"
)

// parsed is a unit file read back with go-systemd's parser.
type parsed struct {
	opts []*unit.UnitOption
	text string
}

func parse(t *testing.T, content []byte) parsed {
	t.Helper()
	opts, err := unit.DeserializeOptions(bytes.NewReader(content))
	if err != nil {
		t.Fatalf("unit.DeserializeOptions: %v\n%s", err, content)
	}
	return parsed{opts: opts, text: string(content)}
}

// all returns every value of section/name, in file order.
func (p parsed) all(section, name string) []string {
	var out []string
	for _, o := range p.opts {
		if o.Section == section && o.Name == name {
			out = append(out, o.Value)
		}
	}
	return out
}

// one returns the single value of section/name, "" when absent.
func (p parsed) one(t *testing.T, section, name string) string {
	t.Helper()
	vs := p.all(section, name)
	switch len(vs) {
	case 0:
		return ""
	case 1:
		return vs[0]
	}
	t.Fatalf("[%s] %s set %d times: %q", section, name, len(vs), vs)
	return ""
}

// words splits a value as systemd splits ExecStart= and Environment=,
// with the importer's reader of systemd's syntax (hermesctl import reads
// what export wrote), after the specifier escape "%%" is "%"; dollars
// decodes "$$" as in ExecStart=.
func words(t *testing.T, v string, dollars bool) []string {
	t.Helper()
	v = strings.ReplaceAll(v, "%%", "%")
	if dollars {
		v = strings.ReplaceAll(v, "$$", "$")
	}
	out, err := importer.SplitWords(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// load parses unit YAML as hermesd would, from a file in dir.
func load(t *testing.T, dir, name, yaml string) *units.Spec {
	t.Helper()
	s, err := (&units.Loader{}).Parse(filepath.Join(dir, name+".yaml"), []byte(yaml))
	if err != nil {
		t.Fatalf("parse unit %s: %v", name, err)
	}
	return s
}

// identityYAML sets every key of units.Exec.
const identityYAML = "command: [/bin/sleep, \"3600\"]\nuser: postgres\ngroup: postgres\nsupplementary_groups: [adm, \"100\"]\n" +
	"umask: \"027\"\nnice: 5\nlimits: {nofile: 65536, core: \"0:infinity\", stack: infinity}\n" +
	"env_file: [/etc/app.env, \"-/etc/app%.local.env\"]\nenv: {A: b}\n" +
	"memory_max: 512MiB\ncpu_weight: 200\ncpu_max: 150%\ntasks_max: 64\n"

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	type check struct {
		section, name string
		want          []string // every value, in order; nil: absent
	}
	tests := []struct {
		name   string
		yaml   string
		checks []check
		exec   []string          // ExecStart words
		env    map[string]string // Environment= assignments
		text   []string          // substrings of the file (comments)
		timer  []check           // checks of NAME.timer; nil: no timer
	}{
		{
			name: "notify",
			yaml: "description: Local model router\ncommand: [/usr/bin/sleep, \"3600\"]\nready: {notify: true}\n",
			checks: []check{
				{"Unit", "Description", []string{"Local model router"}},
				{"Service", "Type", []string{"notify"}},
				{"Service", "WorkingDirectory", []string{dir}},
				{"Service", "Restart", []string{"on-failure"}},
				{"Service", "RestartSec", []string{"1s"}},
				{"Service", "RestartSteps", []string{"5"}},
				{"Service", "RestartMaxDelaySec", []string{"30s"}},
				{"Unit", "StartLimitBurst", []string{"5"}},
				{"Unit", "StartLimitIntervalSec", []string{"60s"}},
				{"Service", "TimeoutStartSec", []string{"90s"}},
				{"Service", "TimeoutStopSec", []string{"3s"}},
				{"Service", "KillSignal", []string{"SIGTERM"}},
				{"Service", "StandardOutput", []string{"append:" + filepath.Join(state, "logs", "notify.log")}},
				{"Service", "StandardError", []string{"append:" + filepath.Join(state, "logs", "notify.log")}},
				{"Install", "WantedBy", []string{"default.target"}},
				{"Service", "RuntimeMaxSec", nil},
				{"Service", "WatchdogSec", nil},
			},
			exec: []string{"/usr/bin/sleep", "3600"},
		},
		{
			name:   "shell",
			yaml:   "shell: \"echo 'it''s' \\\"$HOME\\\" 100% ; sleep 1\"\nready: {tcp: 127.0.0.1:8080}\n",
			checks: []check{{"Service", "Type", []string{"exec"}}},
			exec:   []string{"/bin/sh", "-c", `echo 'it''s' "$HOME" 100% ; sleep 1`},
			text:   []string{"# ready: tcp 127.0.0.1:8080 has no systemd equivalent"},
		},
		{
			name: "env",
			yaml: "command: [printenv, \"a b\", \"\", \"tab\\there\", \"$x\"]\nenv:\n  SPACES: \"two  words\"\n  QUOTES: 'say \"hi\" it''s'\n  PCT: \"100%\"\n  BACK: 'a\\b\\'\n  PLAIN: \"0\"\n",
			exec: []string{"/usr/bin/printenv", "a b", "", "tab\there", "$x"},
			env: map[string]string{
				"SPACES": "two  words", "QUOTES": `say "hi" it's`, "PCT": "100%", "BACK": `a\b\`, "PLAIN": "0",
			},
		},
		{
			name: "exec",
			yaml: identityYAML,
			checks: []check{
				{"Service", "User", []string{"postgres"}},
				{"Service", "Group", []string{"postgres"}},
				{"Service", "SupplementaryGroups", []string{"adm 100"}},
				{"Service", "UMask", []string{"0027"}},
				{"Service", "Nice", []string{"5"}},
				{"Service", "LimitNOFILE", []string{"65536"}},
				{"Service", "LimitCORE", []string{"0:infinity"}},
				{"Service", "LimitSTACK", []string{"infinity"}},
				{"Service", "EnvironmentFile", []string{"/etc/app.env", "-/etc/app%%.local.env"}},
				{"Service", "MemoryMax", []string{"536870912"}},
				{"Service", "CPUWeight", []string{"200"}},
				{"Service", "CPUQuota", []string{"150%"}},
				{"Service", "TasksMax", []string{"64"}},
			},
			env: map[string]string{"A": "b"},
			text: []string{
				"for these to hold.\nUser=postgres\nGroup=postgres\n",
				"# hermes gives these alone.\nSupplementaryGroups=",
				"# hermes gives env: precedence: a variable set in both differs.\nEnvironmentFile=/etc/app.env",
			},
		},
		{
			name:   "nogroups",
			yaml:   "command: [/bin/true]\nuser: nobody\nsupplementary_groups: []\n",
			checks: []check{{"Service", "SupplementaryGroups", nil}, {"Service", "User", []string{"nobody"}}},
			text:   []string{"# supplementary_groups: [] (none) has no systemd equivalent"},
		},
		{
			name: "oneshot",
			yaml: "type: oneshot\nremain_after_exit: true\nshell: \"echo migrated\"\nrestart: \"no\"\n",
			checks: []check{
				{"Service", "Type", []string{"oneshot"}},
				{"Service", "RemainAfterExit", []string{"yes"}},
				{"Service", "TimeoutStartSec", []string{"infinity"}},
				{"Service", "PIDFile", nil},
			},
		},
		{
			name: "oneshot-runtime-max",
			yaml: "type: oneshot\nshell: \"echo migrated\"\ntimeouts: {runtime_max: 5m}\n",
			checks: []check{
				{"Service", "TimeoutStartSec", []string{"300s"}},
				{"Service", "RuntimeMaxSec", nil},
			},
		},
		{
			name: "forking",
			yaml: "type: forking\npid_file: /run/user/1000/redis.pid\ncommand: [/usr/bin/redis-server, --daemonize, \"yes\"]\n",
			checks: []check{
				{"Service", "Type", []string{"forking"}},
				{"Service", "PIDFile", []string{"/run/user/1000/redis.pid"}},
				{"Service", "RemainAfterExit", nil},
				{"Service", "TimeoutStartSec", []string{"90s"}},
			},
		},
		{
			name: "restart-always",
			yaml: "command: [/usr/bin/sleep, \"1\"]\nrestart: always\nrestart_sec: 2s\nrestart_max_sec: 1m\nstart_limit: {burst: 3, interval: 10s}\n",
			checks: []check{
				{"Service", "Restart", []string{"always"}},
				{"Service", "RestartSec", []string{"2s"}},
				{"Service", "RestartSteps", []string{"5"}},
				{"Service", "RestartMaxDelaySec", []string{"60s"}},
				{"Unit", "StartLimitBurst", []string{"3"}},
				{"Unit", "StartLimitIntervalSec", []string{"10s"}},
			},
		},
		{
			name: "restart-no",
			yaml: "command: [/usr/bin/sleep, \"1\"]\nrestart: \"no\"\n",
			checks: []check{
				{"Service", "Restart", []string{"no"}},
				{"Service", "RestartSec", nil},
				{"Service", "RestartSteps", nil},
			},
		},
		{
			name: "timeouts",
			yaml: "command: [/usr/bin/sleep, \"1\"]\ntimeouts: {start: 20s, stop: 1500ms, runtime_max: 1h, watchdog: 10s}\nstop_signal: INT\nworkdir: /tmp\n",
			checks: []check{
				{"Service", "TimeoutStartSec", []string{"20s"}},
				{"Service", "TimeoutStopSec", []string{"1500ms"}},
				{"Service", "RuntimeMaxSec", []string{"3600s"}},
				{"Service", "WatchdogSec", []string{"10s"}},
				{"Service", "KillSignal", []string{"SIGINT"}},
				{"Service", "WorkingDirectory", []string{"/tmp"}},
			},
		},
		{
			name: "deps",
			yaml: "command: [/usr/bin/sleep, \"1\"]\nafter: [cache]\nrequires: [db]\nlog: {path: /var/tmp/deps 100%.log}\n",
			checks: []check{
				{"Unit", "After", []string{"cache.service", "db.service"}},
				{"Unit", "Requires", []string{"db.service"}},
				{"Service", "StandardOutput", []string{"append:/var/tmp/deps 100%%.log"}},
			},
		},
		{
			name: "survivor",
			yaml: "command: [/usr/bin/sleep, \"1\"]\nownership: persist_on_release\nreason: keeps the model warm across restarts\n",
			text: []string{"# ownership: persist_on_release (reason: keeps the model warm across restarts)."},
			checks: []check{
				{"Service", "KillMode", nil},
			},
		},
		{
			name: "job",
			yaml: "command: [/usr/bin/sleep, \"1\"]\nschedule: \"*/15 9-17 * * 1-5\"\nrun_budget_seconds: 850\n",
			checks: []check{
				{"Service", "Restart", []string{"on-failure"}},
				{"Service", "RuntimeMaxSec", []string{"850s"}},
				{"Install", "WantedBy", nil},
			},
			text: []string{"# run_budget_seconds; the wrap-up notice"},
			timer: []check{
				{"Timer", "OnCalendar", []string{"Mon..Fri *-*-* 09..17:00,15,30,45:00"}},
				{"Timer", "AccuracySec", []string{"1s"}},
				{"Timer", "Unit", []string{"job.service"}},
				{"Install", "WantedBy", []string{"timers.target"}},
			},
		},
	}
	look := func(name string) (string, error) { return "/usr/bin/" + name, nil }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := load(t, dir, tt.name, tt.yaml)
			files, err := Files(s, Options{StateDir: state, LookPath: look})
			if err != nil {
				t.Fatalf("Files: %v", err)
			}
			wantNames := []string{tt.name + ".service"}
			if tt.timer != nil {
				wantNames = append(wantNames, tt.name+".timer")
			}
			var names []string
			for _, f := range files {
				names = append(names, f.Name)
			}
			if !slices.Equal(names, wantNames) {
				t.Fatalf("files %q, want %q", names, wantNames)
			}
			svc := parse(t, files[0].Content)
			for _, c := range tt.checks {
				if got := svc.all(c.section, c.name); !slices.Equal(got, c.want) {
					t.Errorf("[%s] %s = %q, want %q", c.section, c.name, got, c.want)
				}
			}
			if tt.exec != nil {
				if got := words(t, svc.one(t, "Service", "ExecStart"), true); !slices.Equal(got, tt.exec) {
					t.Errorf("ExecStart words %q, want %q", got, tt.exec)
				}
			}
			if tt.env != nil {
				got := map[string]string{}
				for _, v := range svc.all("Service", "Environment") {
					w := words(t, v, false)
					if len(w) != 1 {
						t.Fatalf("Environment=%s is %d words, want 1", v, len(w))
					}
					k, val, _ := strings.Cut(w[0], "=")
					got[k] = val
				}
				if len(got) != len(tt.env) {
					t.Errorf("environment %q, want %q", got, tt.env)
				}
				for k, want := range tt.env {
					if got[k] != want {
						t.Errorf("environment %s=%q, want %q", k, got[k], want)
					}
				}
			}
			for _, sub := range tt.text {
				if !strings.Contains(svc.text, sub) {
					t.Errorf("service file lacks %q:\n%s", sub, svc.text)
				}
			}
			if tt.timer != nil {
				tm := parse(t, files[1].Content)
				for _, c := range tt.timer {
					if got := tm.all(c.section, c.name); !slices.Equal(got, c.want) {
						t.Errorf("timer [%s] %s = %q, want %q", c.section, c.name, got, c.want)
					}
				}
			}
		})
	}
}

func TestFilesRefuses(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, yaml string
		want       error
	}{
		{"hermesd", "command: [sleep, \"1\"]\n", ErrName},
		{"tmpl@", "command: [sleep, \"1\"]\n", ErrName},
		{"either-day", "command: [sleep, \"1\"]\nschedule: \"0 8 1 * 1\"\n", ErrSchedule},
		{"prefix", "command: [\"-x\", \"1\"]\n", ErrValue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := load(t, dir, tt.name, tt.yaml)
			if _, err := Files(s, Options{}); !errors.Is(err, tt.want) {
				t.Errorf("Files: %v, want %v", err, tt.want)
			}
		})
	}
}

func TestOnCalendar(t *testing.T) {
	tests := []struct{ cron, want string }{
		{"* * * * *", "*-*-* *:*:00"},
		{"*/15 * * * *", "*-*-* *:00,15,30,45:00"},
		{"5/20 * * * *", "*-*-* *:05,25,45:00"},
		{"0 9-17 * * 1-5", "Mon..Fri *-*-* 09..17:00:00"},
		{"30 2 1,15 * *", "*-*-01,15 02:30:00"},
		{"0 0 * JAN,JUL SUN", "Sun *-01,07-* 00:00:00"},
		{"0 12 * * 0,6", "Sat,Sun *-*-* 12:00:00"},
		{"0 12 * * 5-6", "Fri,Sat *-*-* 12:00:00"},
		{"0 0 1-31 * 1", "*-*-* 00:00:00"}, // either day matches, and every day of the month does
		{"0,10,20,45 */6 * * *", "*-*-* 00,06,12,18:00,10,20,45:00"},
		{"CRON_TZ=Europe/Paris 0 8 * * *", "*-*-* 08:00:00 Europe/Paris"},
	}
	for _, tt := range tests {
		t.Run(tt.cron, func(t *testing.T) {
			got, err := OnCalendar(tt.cron)
			if err != nil {
				t.Fatalf("OnCalendar: %v", err)
			}
			if got != tt.want {
				t.Errorf("OnCalendar(%q) = %q, want %q", tt.cron, got, tt.want)
			}
		})
	}
	for _, bad := range []string{"0 8 1 * 1", "0 8 */2 * MON-FRI", "not cron", "0 8 * *"} {
		t.Run("refuse "+bad, func(t *testing.T) {
			if got, err := OnCalendar(bad); !errors.Is(err, ErrSchedule) {
				t.Errorf("OnCalendar(%q) = %q, %v; want an error wrapping ErrSchedule", bad, got, err)
			}
		})
	}
}

func TestGatewayFile(t *testing.T) {
	f, err := GatewayFile(Gateway{Hermesd: "/opt/hermes units/hermesd", Units: "/home/u/.config/hermes/units", State: "/home/u/.local/state/hermes", Watchdog: 30e9})
	if err != nil {
		t.Fatalf("GatewayFile: %v", err)
	}
	if f.Name != "hermesd.service" {
		t.Errorf("name %q, want hermesd.service", f.Name)
	}
	p := parse(t, f.Content)
	for _, c := range []struct{ section, name, want string }{
		{"Service", "Type", "notify"},
		{"Service", "KillMode", "process"},
		{"Service", "Delegate", "yes"},
		{"Service", "Restart", "on-failure"},
		{"Service", "WatchdogSec", "30s"},
		{"Install", "WantedBy", "default.target"},
	} {
		if got := p.one(t, c.section, c.name); got != c.want {
			t.Errorf("[%s] %s = %q, want %q", c.section, c.name, got, c.want)
		}
	}
	want := []string{"/opt/hermes units/hermesd", "--units", "/home/u/.config/hermes/units", "--state", "/home/u/.local/state/hermes"}
	if got := words(t, p.one(t, "Service", "ExecStart"), true); !slices.Equal(got, want) {
		t.Errorf("ExecStart words %q, want %q", got, want)
	}
	if !strings.Contains(p.text, "# Only hermesd itself is signalled on stop.") {
		t.Errorf("no KillMode comment above KillMode=process:\n%s", p.text)
	}
	// A socket, when named, is passed on.
	f, err = GatewayFile(Gateway{Hermesd: "/bin/hermesd", Units: "/u", State: "/s", Socket: "/run/h sock"})
	if err != nil {
		t.Fatalf("GatewayFile with a socket: %v", err)
	}
	want = []string{"/bin/hermesd", "--units", "/u", "--state", "/s", "--socket", "/run/h sock"}
	if got := words(t, parse(t, f.Content).one(t, "Service", "ExecStart"), true); !slices.Equal(got, want) {
		t.Errorf("ExecStart words with a socket %q, want %q", got, want)
	}
	if _, err := GatewayFile(Gateway{Hermesd: "hermesd"}); !errors.Is(err, ErrValue) {
		t.Errorf("relative hermesd path: %v, want ErrValue", err)
	}
}

func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	files := []File{{Name: "x.service", Content: []byte("[Service]\nType=exec\n")}, {Name: "x.timer", Content: []byte("[Timer]\n")}}
	if err := Write(dir, files, false); err != nil {
		t.Fatalf("Write: %v", err)
	}
	files[1].Content = []byte("[Timer]\nOnCalendar=daily\n")
	if err := Write(dir, files, false); !errors.Is(err, ErrExists) {
		t.Fatalf("second Write without force: %v, want ErrExists", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "x.timer")); string(b) != "[Timer]\n" {
		t.Errorf("refused Write changed x.timer to %q", b)
	}
	if err := Write(dir, files, true); err != nil {
		t.Fatalf("Write with force: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "x.timer")); string(b) != "[Timer]\nOnCalendar=daily\n" {
		t.Errorf("x.timer = %q after force", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("dir holds %d entries, want 2 (no temporary files left)", len(ents))
	}
}

// TestCalendarMatchesCron checks with systemd's own calendar parser, where
// systemd-analyze is installed, that each OnCalendar= expression fires at
// the same times as its cron schedule.
func TestCalendarMatchesCron(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed: the exactness check needs systemd's calendar parser")
	}
	base := time.Date(2025, 1, 30, 22, 7, 0, 0, time.UTC)
	const n = 300
	for _, expr := range []string{
		"*/15 * * * *", "5/20 */7 * * *", "0 9-17 * * 1-5", "30 2 1,15,31 * *", "0 0 * JAN,JUL SUN",
		"0 12 * * 0,6", "0,10,20,45 */6 * * *", "0 0 29 2 *", "59 23 * * 3-6", "0 0 1-31 * 1",
	} {
		t.Run(expr, func(t *testing.T) {
			cal, err := OnCalendar("CRON_TZ=UTC " + expr)
			if err != nil {
				t.Fatalf("OnCalendar: %v", err)
			}
			cmd := exec.CommandContext(t.Context(), sa, "calendar", "--iterations="+strconv.Itoa(n),
				"--base-time="+base.Format("2006-01-02 15:04:05")+" UTC", cal)
			cmd.Env = append(os.Environ(), "TZ=UTC", "SYSTEMD_COLORS=0")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("systemd-analyze calendar %q: %v\n%s", cal, err, out)
			}
			var got []time.Time
			for _, line := range strings.Split(string(out), "\n") {
				_, v, ok := strings.Cut(line, ": ")
				if !strings.Contains(line, "Next elapse:") && !strings.Contains(line, "Iter. #") || !ok {
					continue
				}
				ts, err := time.Parse("Mon 2006-01-02 15:04:05 MST", strings.TrimSpace(v))
				if err != nil {
					t.Fatalf("systemd-analyze line %q: %v", line, err)
				}
				got = append(got, ts)
			}
			sched, err := units.ParseSchedule("CRON_TZ=UTC " + expr)
			if err != nil {
				t.Fatal(err)
			}
			var want []time.Time
			for at := base; len(want) < n; {
				if at = sched.Next(at); at.IsZero() {
					break // robfig/cron looks five years ahead at most
				}
				want = append(want, at)
			}
			if len(got) < len(want) {
				t.Fatalf("systemd-analyze gave %d times, want %d:\n%s", len(got), len(want), out)
			}
			for i := range want {
				if !got[i].Equal(want[i]) {
					t.Fatalf("%s: run %d at %v by systemd, %v by cron", cal, i+1, got[i], want[i])
				}
			}
		})
	}
}

// TestVerify runs `systemd-analyze verify --user` over exported units and
// hermesd.service, where systemd-analyze is installed.
func TestVerify(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "units")
	var files []File
	for _, u := range []struct{ name, yaml string }{
		{"db", "command: [/bin/sleep, \"3600\"]\nready: {notify: true}\n"},
		{"web", "shell: \"exec sleep 3600\"\nrequires: [db]\nenv: {A: \"x y\"}\ntimeouts: {watchdog: 10s, runtime_max: 1h}\n"},
		{"job", "command: [/bin/true]\nschedule: \"*/5 * * * 1-5\"\n"},
		{"exec", identityYAML},
	} {
		fs, err := Files(load(t, src, u.name, u.yaml), Options{StateDir: filepath.Join(dir, "state")})
		if err != nil {
			t.Fatalf("Files(%s): %v", u.name, err)
		}
		files = append(files, fs...)
	}
	gw, err := GatewayFile(Gateway{Hermesd: "/bin/true", Units: src, State: filepath.Join(dir, "state"), Watchdog: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, gw)
	out := filepath.Join(dir, "out")
	if err := Write(out, files, false); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range files {
		paths = append(paths, filepath.Join(out, f.Name))
	}
	found, err := testkit.SystemdVerify(t, paths...)
	if err != nil {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, strings.Join(found, "\n"))
	}
	for _, line := range found {
		t.Errorf("systemd-analyze verify: %s", line)
	}
}
