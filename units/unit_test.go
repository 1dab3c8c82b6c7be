package units

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// parse decodes unit content as the file /units/web.yaml.
func parse(t *testing.T, content string) (*Spec, Errors) {
	t.Helper()
	s, err := (&Loader{}).Parse("/units/web.yaml", []byte(content))
	if err == nil {
		return s, nil
	}
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("Parse error %T %v, want units.Errors", err, err)
	}
	for _, e := range es {
		if e.Line < 1 || e.Column < 1 {
			t.Errorf("error %q has line %d column %d, want both ≥ 1", e, e.Line, e.Column)
		}
		if !errors.Is(e, ErrInvalid) && !errors.Is(e, ErrFile) {
			t.Errorf("error %q matches neither ErrInvalid nor ErrFile", e)
		}
	}
	return nil, es
}

// rejection is a file a parser must refuse, with where its error is and
// what it says.
type rejection struct {
	name      string
	content   string
	line, col int
	msg       string
}

// check reports a failure unless es holds an error of file at r's line
// and column whose message contains r's.
func (r rejection) check(t *testing.T, es Errors, file string) {
	t.Helper()
	for _, e := range es {
		if e.Line == r.line && e.Column == r.col && strings.Contains(e.Msg, r.msg) && e.File == file {
			return
		}
	}
	t.Errorf("got errors:\n%v\nwant one of %s at %d:%d containing %q", es, file, r.line, r.col, r.msg)
}

func TestParseRejects(t *testing.T) {
	tests := []rejection{
		{"unknown key with suggestion", "command: [a]\ncomand: [b]\n", 2, 1, `unknown key "comand"; did you mean "command"?`},
		{"unknown key other case", "command: [a]\nStop_Signal: TERM\n", 2, 1, `did you mean "stop_signal"?`},
		{"unknown key far from all", "command: [a]\nzzzzzz: 1\n", 2, 1, `unknown key "zzzzzz" (known keys: description, type, command`},
		{"unknown nested key", "command: [a]\ntimeouts:\n  strat: 5s\n", 3, 3, `timeouts: unknown key "strat"; did you mean "start"?`},
		{"duplicate key", "command: [a]\nshell: x\ncommand: [b]\n", 3, 1, `key "command" is already set at line 1`},
		{"command and shell", "command: [a]\nshell: b\n", 2, 1, "both command: and shell: are set"},
		{"neither command nor shell", "description: x\n", 1, 1, "no command: or shell:"},
		{"reload_signal and reload", "command: [a]\nreload_signal: HUP\nreload: [a, reload]\n", 3, 1, "both reload_signal: and reload: are set"},
		{"bad reload_signal", "command: [a]\nreload_signal: NOPE\n", 2, 16, "reload_signal:"},
		{"empty reload", "command: [a]\nreload: []\n", 2, 9, "reload: want the program and its arguments"},
		{"empty command", "command: []\n", 1, 10, "command: must not be empty"},
		{"empty program", "command: ['', x]\n", 1, 10, "program name (first item) must not be empty"},
		{"command not a list", "command: ls -l\n", 1, 10, "command: want a list"},
		{"command item a mapping", "command: [a, {b: c}]\n", 1, 14, "command: each item must be a string"},
		{"empty shell", "shell: ''\n", 1, 8, "shell: must not be empty"},
		{"bad ownership", "command: [a]\nownership: owner\n", 2, 12, `unknown ownership "owner": want owned, adoptable or persist_on_release`},
		{"survivor without reason", "command: [a]\nownership: adoptable\n", 2, 12, "every survivor has a written reason"},
		{"survivor with blank reason", "command: [a]\nownership: persist_on_release\nreason: '  '\n", 2, 12, "persist_on_release needs a non-empty reason"},
		{"bad type", "command: [a]\ntype: notify\n", 2, 7, `type: unknown type "notify": want simple, oneshot or forking`},
		{"pid file without forking", "command: [a]\npid_file: /tmp/a.pid\n", 2, 1, "pid_file: names the main pid of a daemon that forks; add type: forking"},
		{"remain without oneshot", "command: [a]\ntype: forking\nremain_after_exit: true\n", 3, 1, "remain_after_exit: applies to a step that runs to completion; add type: oneshot"},
		{"oneshot with a probe", "command: [a]\ntype: oneshot\nready: {tcp: 127.0.0.1:1}\n", 3, 1, "ready: a oneshot unit is done when its process exits 0"},
		{"oneshot restarted always", "command: [a]\ntype: oneshot\nrestart: always\n", 3, 10, "restart: always cannot go with type: oneshot"},
		{"forking job", "command: [a]\ntype: forking\nschedule: '* * * * *'\n", 2, 7, "type: forking cannot go with schedule:"},
		{"bad restart", "command: [a]\nrestart: sometimes\n", 2, 10, `unknown restart policy "sometimes"`},
		{"bad duration", "command: [a]\nrestart_sec: soon\n", 2, 14, `restart_sec: "soon" is not a duration`},
		{"negative duration", "command: [a]\ntimeouts: {stop: -1s}\n", 2, 18, "timeouts.stop: must not be negative"},
		{"duration without unit", "command: [a]\ntimeouts: {start: 90}\n", 2, 19, `timeouts.start: 90 has no unit; write a duration like "90s"`},
		{"zero start timeout", "command: [a]\ntimeouts: {start: 0s}\n", 2, 19, "timeouts.start: must be more than zero"},
		{"seconds as a string", "command: [a]\nschedule: '* * * * *'\nrun_budget_seconds: 15m\n", 3, 21, "run_budget_seconds: want a whole number of seconds"},
		{"zero budget", "command: [a]\nschedule: '* * * * *'\nrun_budget_seconds: 0\n", 3, 21, "run_budget_seconds: must be more than zero"},
		{"budget without schedule", "command: [a]\nrun_budget_seconds: 60\n", 2, 1, "only a job has a run budget"},
		{"wrapup without budget", "command: [a]\nschedule: '* * * * *'\nwrapup_signal: USR1\n", 3, 1, "run_budget_seconds, which is not set"},
		{"restart max below first", "command: [a]\nrestart_sec: 10s\nrestart_max_sec: 5s\n", 3, 18, "restart_max_sec (5s) is below restart_sec (10s)"},
		{"bad size", "command: [a]\nlog: {max_size: 10XB}\n", 2, 17, `"10XB" is not a size`},
		{"zero size", "command: [a]\nlog: {max_size: 0}\n", 2, 17, "log.max_size: must be more than zero"},
		{"negative keep", "command: [a]\nlog: {keep: -1}\n", 2, 13, "log.keep: -1 is out of range"},
		{"bad signal name", "command: [a]\nstop_signal: SIGFOO\n", 2, 14, `unknown signal "SIGFOO"`},
		{"signal number out of range", "command: [a]\nstop_signal: 99\n", 2, 14, "signal 99 is out of range"},
		{"port zero", "command: [a]\nports: [0]\n", 2, 9, "ports: 0 is not a port (1..65535)"},
		{"port too high", "command: [a]\nports: [8080, 70000]\n", 2, 15, "ports: 70000 is not a port"},
		{"port twice", "command: [a]\nports: [8080, 8080]\n", 2, 15, "ports: 8080 is listed twice"},
		{"port not a number", "command: [a]\nports: [http]\n", 2, 9, "ports: each item must be a port number"},
		{"two probes", "command: [a]\nready: {tcp: 'a:1', log: ok}\n", 2, 21, "ready: ready.tcp and ready.log are both set; a unit has at most one readiness probe"},
		{"bad log regexp", "command: [a]\nready: {log: 'ready ('}\n", 2, 14, `ready.log: "ready (" is not a regular expression`},
		{"tcp without port", "command: [a]\nready: {tcp: localhost}\n", 2, 14, `ready.tcp: "localhost" is not host:port`},
		{"tcp without host", "command: [a]\nready: {tcp: ':80'}\n", 2, 14, "is not host:port"},
		{"http not http", "command: [a]\nready: {http: 'ftp://x/'}\n", 2, 15, "is not an http:// or https:// URL"},
		{"notify not bool", "command: [a]\nready: {notify: yes please}\n", 2, 17, "ready.notify: want true or false"},
		{"bad cron", "command: [a]\nschedule: '* * *'\n", 2, 11, "is not a 5-field cron expression"},
		{"cron with seconds", "command: [a]\nschedule: '0 * * * * *'\n", 2, 11, "is not a 5-field cron expression"},
		{"cron descriptor", "command: [a]\nschedule: '@daily'\n", 2, 11, "is not a 5-field cron expression"},
		{"job with restart always", "command: [a]\nschedule: '*/5 * * * *'\nrestart: always\n", 3, 10, "restart: always cannot go with schedule:"},
		{"after itself", "command: [a]\nafter: [web]\n", 2, 9, "after: a unit cannot depend on itself"},
		{"after bad name", "command: [a]\nrequires: [../x]\n", 2, 12, `requires: "../x" is not a unit name`},
		{"after twice", "command: [a]\nafter: [db, db]\n", 2, 13, `after: "db" is listed twice`},
		{"env nested", "command: [a]\nenv:\n  A: {b: c}\n", 3, 6, "env: A: want a string value"},
		{"env not a mapping", "command: [a]\nenv: [A=1]\n", 2, 6, "env: want a mapping"},
		{"env bad name", "command: [a]\nenv: {'A=B': x}\n", 2, 7, "is not a variable name"},
		{"workdir of another user", "command: [a]\nworkdir: ~bob/x\n", 2, 10, "~user is not supported"},
		{"start limit zero burst", "command: [a]\nstart_limit: {burst: 0}\n", 2, 22, "start_limit.burst: 0 is out of range"},
		{"provider without base_url", "command: [a]\nprovider: {id: x}\n", 2, 11, "provider: base_url: is required"},
		{"provider key value", "command: [a]\nprovider: {id: x, base_url: 'http://h/', api_key_env: 'sk=1'}\n", 2, 55, "api_key_env: write the name of the variable"},
		{"notify then a probe", "command: [a]\nready: {notify: true, http: 'http://h/'}\n", 2, 23, "ready: ready.notify and ready.http are both set"},
		{"provider without id", "command: [a]\nprovider: {base_url: 'http://127.0.0.1:8080/v1'}\n", 2, 11, "provider: id: is required"},
		{"provider bad url", "command: [a]\nprovider: {id: x, base_url: localhost}\n", 2, 29, "provider.base_url: \"localhost\" is not an http"},
		{"provider zero stale", "command: [a]\nprovider: {id: x, base_url: 'http://h/', stale_timeout_seconds: 0}\n", 2, 65, "provider.stale_timeout_seconds: must be more than zero"},
		{"provider model unknown key", "command: [a]\nprovider:\n  id: x\n  base_url: http://h/\n  models:\n    m1: {stale_timeout: 5}\n", 6, 10, `provider.models.m1: unknown key "stale_timeout"; did you mean "stale_timeout_seconds"?`},
		{"provider tier negative", "command: [a]\nprovider:\n  id: x\n  base_url: http://h/\n  tiers:\n    - {above_tokens: -5, seconds: 600}\n", 6, 22, "provider.tiers[0].above_tokens: -5 is out of range"},
		{"provider api key value", "command: [a]\nprovider: {id: x, base_url: 'http://h/', api_key_env: 'sk-123 456'}\n", 2, 55, "write the name of the variable"},
		{"empty file", "", 1, 1, "empty file"},
		{"only comments", "# nothing here\n", 1, 1, "no keys, only comments"},
		{"only a null", "~\n", 1, 1, "empty document"},
		{"not a mapping", "- command\n", 1, 1, "a unit file is a mapping of keys"},
		{"scalar document", "hello\n", 1, 1, "a unit file is a mapping of keys"},
		{"two documents", "command: [a]\n---\ncommand: [b]\n", 2, 1, "a second YAML document"},
		{"syntax error", "command: [a\nshell: b\n", 1, 10, "YAML syntax: this [ is never closed"},
		{"bad indentation", "command: [a]\ntimeouts:\n  start: 1s\n stop: 1s\n", 3, 1, "YAML syntax:"},
		{"invalid utf-8", "command: [a]\ndescription: h\xffllo\n", 2, 15, "invalid UTF-8"},
		{"tab indentation", "command: [a]\ntimeouts:\n\tstart: 1s\n", 3, 1, "YAML syntax: tabs are not allowed for indentation; use spaces"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, es := parse(t, tt.content)
			if s != nil {
				t.Fatalf("Parse accepted %q, want an error %q", tt.content, tt.msg)
			}
			tt.check(t, es, "/units/web.yaml")
		})
	}
}

func TestParseTooLarge(t *testing.T) {
	data := "command: [a]\n" + strings.Repeat("# padding\n", MaxFileSize/10+1)
	_, es := parse(t, data)
	if len(es) != 1 || !errors.Is(es[0], ErrFile) || !strings.Contains(es[0].Msg, "over the 1048576-byte limit") {
		t.Errorf("got %v, want one ErrFile error about the size limit", es)
	}
}

func TestParseValues(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skipf("no home directory to expand ~ against: %v", err)
	}
	tests := []struct {
		name    string
		content string
		check   func(*Spec) (got, want any)
	}{
		{"defaults", "command: [a]", func(s *Spec) (any, any) {
			return []any{s.Ownership, s.Restart, s.RestartSec, s.RestartMax, s.StartLimit, s.Timeouts, s.StopSignal, s.Log},
				[]any{Owned, RestartOnFailure, time.Second, 30 * time.Second, StartLimit{5, time.Minute}, Timeouts{Start: 90 * time.Second, Stop: 3 * time.Second}, Signal(syscall.SIGTERM), Log{MaxSize: 10 << 20, Keep: 3}}
		}},
		{"name from the file", "command: [a]", func(s *Spec) (any, any) { return s.Name, "web" }},
		{"argv of command", "command: [python3, -m, http.server, 8080]", func(s *Spec) (any, any) {
			return strings.Join(s.Argv(), " "), "python3 -m http.server 8080"
		}},
		{"argv of shell", "shell: npm run dev", func(s *Spec) (any, any) { return strings.Join(s.Argv(), "|"), "/bin/sh|-c|npm run dev" }},
		{"duration with minutes", "command: [a]\nrestart_max_sec: 1m30s", func(s *Spec) (any, any) { return s.RestartMax, 90 * time.Second }},
		{"sec key takes integers", "command: [a]\nrestart_sec: 2", func(s *Spec) (any, any) { return s.RestartSec, 2 * time.Second }},
		{"zero restart_sec", "command: [a]\nrestart_sec: 0s", func(s *Spec) (any, any) { return s.RestartSec, time.Duration(0) }},
		{"size MiB", "command: [a]\nlog: {max_size: 10MiB}", func(s *Spec) (any, any) { return s.Log.MaxSize, Size(10 << 20) }},
		{"size KB", "command: [a]\nlog: {max_size: 512KB}", func(s *Spec) (any, any) { return s.Log.MaxSize, Size(512000) }},
		{"size bytes", "command: [a]\nlog: {max_size: 4096}", func(s *Spec) (any, any) { return s.Log.MaxSize, Size(4096) }},
		{"signal name", "command: [a]\nstop_signal: INT", func(s *Spec) (any, any) { return s.StopSignal, Signal(syscall.SIGINT) }},
		{"signal SIG name", "command: [a]\nstop_signal: SIGHUP", func(s *Spec) (any, any) { return s.StopSignal, Signal(syscall.SIGHUP) }},
		{"signal lower case", "command: [a]\nstop_signal: quit", func(s *Spec) (any, any) { return s.StopSignal, Signal(syscall.SIGQUIT) }},
		{"signal number", "command: [a]\nstop_signal: 15", func(s *Spec) (any, any) { return s.StopSignal.String(), "TERM" }},
		{"workdir home", "command: [a]\nworkdir: ~/models", func(s *Spec) (any, any) { return s.Workdir, filepath.Join(home, "models") }},
		{"workdir relative", "command: [a]\nworkdir: ../data", func(s *Spec) (any, any) { return s.Workdir, "/data" }},
		{"log path relative", "command: [a]\nlog: {path: logs/web.log}", func(s *Spec) (any, any) { return s.Log.Path, "/units/logs/web.log" }},
		{"env scalars as written", "command: [a]\nenv: {A: 0, B: true, C: x, D: }", func(s *Spec) (any, any) {
			return s.Env, map[string]string{"A": "0", "B": "true", "C": "x", "D": ""}
		}},
		{"survivor with reason", "command: [a]\nownership: adoptable\nreason: background job", func(s *Spec) (any, any) { return s.Ownership, Adoptable }},
		{"job keeps on-failure", "command: [a]\nschedule: '*/15 * * * *'\nrun_budget_seconds: 850", func(s *Spec) (any, any) {
			return []any{s.IsJob(), s.RunBudget}, []any{true, 850 * time.Second}
		}},
		{"ready notify false is no probe", "command: [a]\nready: {notify: false, tcp: '127.0.0.1:80'}", func(s *Spec) (any, any) { return s.Ready, Ready{TCP: "127.0.0.1:80"} }},
		{"timeouts partial keep defaults", "command: [a]\ntimeouts: {start: 5s}", func(s *Spec) (any, any) {
			return s.Timeouts, Timeouts{Start: 5 * time.Second, Stop: 3 * time.Second}
		}},
		{"anchors and aliases", "x: &cmd [a, b]\ncommand: *cmd", nil},
		{"empty blocks", "command: [a]\ntimeouts:\nready:\nenv:", func(s *Spec) (any, any) { return s.Timeouts.Start, 90 * time.Second }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, es := parse(t, tt.content)
			if tt.check == nil {
				if s != nil {
					t.Fatalf("Parse accepted an unknown key x")
				}
				return
			}
			if s == nil {
				t.Fatalf("Parse: %v", es)
			}
			if got, want := tt.check(s); !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestAliasResolved(t *testing.T) {
	s, es := parse(t, "description: &d [a, b]\ncommand: *d\n")
	if s != nil || len(es) != 1 || !strings.Contains(es[0].Msg, "description: want a string") {
		t.Errorf("got %v, want one error about description being a list", es)
	}
	s, es = parse(t, "env: &e {A: x}\ncommand: [a]\ntimeouts: {start: &t 5s, stop: *t}\n")
	if s == nil {
		t.Fatalf("Parse: %v", es)
	}
	if s.Timeouts.Stop != 5*time.Second {
		t.Errorf("stop via alias: got %v, want 5s", s.Timeouts.Stop)
	}
}

func TestLoaderDefaults(t *testing.T) {
	def := BuiltinDefaults()
	def.Restart = RestartAlways
	def.Timeouts.Stop = 10 * time.Second
	def.Log.Keep = 7
	l := &Loader{Defaults: &def}
	s, err := l.Parse("/u/a.yaml", []byte("command: [a]\nrestart: no\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Restart != RestartNo || s.Timeouts.Stop != 10*time.Second || s.Log.Keep != 7 {
		t.Errorf("got restart %v stop %v keep %d, want no (set), 10s and 7 (defaults)", s.Restart, s.Timeouts.Stop, s.Log.Keep)
	}
	// A job whose restart comes from defaults: always falls back to on-failure.
	s, err = l.Parse("/u/job.yaml", []byte("command: [a]\nschedule: '0 * * * *'\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Restart != RestartOnFailure {
		t.Errorf("job restart: got %v, want on-failure", s.Restart)
	}
}

func TestIsUnitFile(t *testing.T) {
	for name, want := range map[string]bool{
		"web.yaml": true, "web.yml": true, "a.b.yaml": true,
		".web.yaml.swp": false, ".web.yaml": false, "web.yaml~": false, "4913": false,
		".#web.yaml": false, "web.json": false, ".yaml": false, "web.yaml.swp": false, "README": false,
	} {
		if got := IsUnitFile(name); got != want {
			t.Errorf("IsUnitFile(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestSuggest(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"comand", "command"}, {"restart-sec", "restart_sec"}, {"workdir", "workdir"}, {"wrkdir", "workdir"},
		{"xyz", ""}, {"timeout", "timeouts"}, {"port", "ports"},
	} {
		if got := suggest(tt.in, unitFields.names()); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestFormatDuration: a duration is written without trailing zero units,
// and what it writes parses back to the same duration.
func TestFormatDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{24 * time.Hour, "24h"},
		{90 * time.Second, "1m30s"},
		{time.Hour + time.Minute, "1h1m"},
		{2 * time.Minute, "2m"},
		{500 * time.Millisecond, "500ms"},
		{0, "0s"},
		{time.Hour + time.Second, "1h0m1s"},
	} {
		got := FormatDuration(tc.d)
		if got != tc.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
		if back, err := time.ParseDuration(got); err != nil || back != tc.d {
			t.Errorf("time.ParseDuration(%q) = %v, %v; want %v", got, back, err, tc.d)
		}
	}
}
