package units

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestExecKeys(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "db.yaml")
	tests := []struct {
		name string
		yaml string
		want Exec
	}{
		{"user and group", "user: postgres\ngroup: \"1001\"\n", Exec{User: "postgres", Group: "1001"}},
		{"supplementary groups", "user: nobody\nsupplementary_groups: [ssl-cert, video]\n", Exec{User: "nobody", Groups: []string{"ssl-cert", "video"}}},
		{"no supplementary groups", "user: nobody\nsupplementary_groups: []\n", Exec{User: "nobody", Groups: []string{}}},
		{"umask quoted", "umask: \"0027\"\n", Exec{Umask: ptr(uint32(0o027))}},
		{"umask plain is octal too", "umask: 22\n", Exec{Umask: ptr(uint32(0o022))}},
		{"umask zero", "umask: 0\n", Exec{Umask: ptr(uint32(0))}},
		{"nice", "nice: -5\n", Exec{Nice: ptr(-5)}},
		{"limits", "limits: {nofile: 65536, core: infinity, nproc: \"512:1024\", stack: \"8388608:infinity\"}\n",
			Exec{Limits: map[string]Rlimit{"nofile": {65536, 65536}, "core": {Infinity, Infinity}, "nproc": {512, 1024}, "stack": {8 << 20, Infinity}}}},
		{"cgroup", "memory_max: 1GiB\ncpu_weight: 200\ncpu_max: 150%\ntasks_max: 64\n",
			Exec{Cgroup: CgroupLimits{MemoryMax: 1 << 30, CPUWeight: 200, CPUMax: 150, TasksMax: 64}}},
		{"env_file one", "env_file: .env\n", Exec{EnvFiles: []EnvFile{{Path: filepath.Join(dir, ".env")}}}},
		{"env_file several, optional", "env_file: [/etc/db.env, -local.env]\n",
			Exec{EnvFiles: []EnvFile{{Path: "/etc/db.env"}, {Path: filepath.Join(dir, "local.env"), Optional: true}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := (&Loader{}).Parse(file, []byte("command: [postgres]\n"+tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.Exec, tt.want) {
				t.Errorf("got %+v, want %+v", s.Exec, tt.want)
			}
		})
	}
}

func TestExecKeysRefused(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"umask not octal", "umask: \"0089\"\n", `db.yaml:2:8: umask: "0089" is not an octal mask from 0000 to 0777; write one like "0027"`},
		{"umask too wide", "umask: \"01777\"\n", `umask: "01777" is not an octal mask`},
		{"nice out of range", "nice: 20\n", "nice: 20 is out of range; allowed: -20 (first) to 19 (last)"},
		{"unknown limit", "limits: {files: 10}\n", `limits: unknown key "files"`},
		{"limit not a number", "limits: {nofile: lots}\n", `limits.nofile: "lots" is not a limit`},
		{"soft above hard", "limits: {nofile: \"4096:1024\"}\n", "db.yaml:2:18: limits.nofile: soft limit 4096 is above the hard limit 1024; the soft limit comes first"},
		{"user with a colon", "user: \"a:b\"\n", `user: "a:b" is not a name or number`},
		{"cpu_max not a percentage", "cpu_max: half\n", `cpu_max: "half" is not a percentage of one CPU`},
		{"cpu_weight out of range", "cpu_weight: 0\n", "cpu_weight: 0 is out of range; allowed: 1 to 10000"},
		{"env_file empty entry", "env_file: [\"-\"]\n", "env_file: an entry names no file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := (&Loader{}).Parse("/units/db.yaml", []byte("command: [postgres]\n"+tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalid) {
				t.Errorf("got %v, want an ErrInvalid holding %q", err, tt.want)
			}
		})
	}
}

// TestIdentityNeedsRoot: under a hermesd that is not root, user:, group:
// and supplementary_groups: are refused at load, at their key, and so are
// defaults that set them; the other exec keys are not.
func TestIdentityNeedsRoot(t *testing.T) {
	un := &Loader{Unprivileged: true}
	_, err := un.Parse("/units/db.yaml", []byte("command: [postgres]\nuser: postgres\ngroup: postgres\n"))
	want := "/units/db.yaml:2:1: user: needs hermesd to run as root, and it does not; run hermesd as root, or remove it (and run hermesd as the user the unit needs)"
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "db.yaml:3:1: group: needs hermesd to run as root") {
		t.Errorf("got %v, want %q and the same for group:", err, want)
	}
	if _, err := (&Loader{}).Parse("/units/db.yaml", []byte("command: [postgres]\nuser: postgres\n")); err != nil {
		t.Errorf("as root: %v", err)
	}
	if _, err := un.Parse("/units/db.yaml", []byte("command: [postgres]\nnice: 5\numask: \"077\"\nlimits: {nofile: 1024}\n")); err != nil {
		t.Errorf("limits without identity: %v", err)
	}
	def := BuiltinDefaults()
	def.User = "nobody"
	un.Defaults = &def
	_, err = un.Parse("/units/db.yaml", []byte("command: [postgres]\n"))
	if err == nil || !strings.Contains(err.Error(), "hermes.yaml's defaults: set user:") {
		t.Errorf("got %v, want the defaults' identity refused", err)
	}
}

// TestExecDefaults: hermes.yaml's defaults: set every exec key; a unit's
// key replaces the default's, and limits: merge by resource.
func TestExecDefaults(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "hermes.yaml")
	if err := os.WriteFile(cfg, []byte("defaults:\n  user: nobody\n  umask: \"0077\"\n  nice: 10\n  limits: {nofile: 1024, core: 0}\n  tasks_max: 100\n  env_file: [-common.env]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l := &Loader{Defaults: &c.Defaults}
	s, err := l.Parse(filepath.Join(dir, "units", "db.yaml"), []byte("command: [postgres]\nuser: postgres\nlimits: {nofile: 65536}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := Exec{
		User: "postgres", Umask: ptr(uint32(0o077)), Nice: ptr(10),
		Limits:   map[string]Rlimit{"nofile": {65536, 65536}, "core": {0, 0}},
		Cgroup:   CgroupLimits{TasksMax: 100},
		EnvFiles: []EnvFile{{Path: filepath.Join(dir, "common.env"), Optional: true}},
	}
	if !reflect.DeepEqual(s.Exec, want) {
		t.Errorf("got %+v, want %+v", s.Exec, want)
	}
	if got := c.Defaults.Limits["nofile"]; got != (Rlimit{1024, 1024}) {
		t.Errorf("the unit's limits wrote into the defaults: nofile %v", got)
	}
}

func TestParseEnv(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
		err        string
	}{
		{"plain", "A=1\nB=two words\n", []string{"A=1", "B=two words"}, ""},
		{"comments and blanks", "# c\n\n; also\n  \nA=1\n", []string{"A=1"}, ""},
		{"export", "export A=1\n", []string{"A=1"}, ""},
		{"spaces around", "  A = 1  \n", []string{"A=1"}, ""},
		{"empty value", "A=\n", []string{"A="}, ""},
		{"double quotes and escapes", `A="a \"b\" \\ \$x\nz"` + "\n", []string{"A=a \"b\" \\ $x\nz"}, ""},
		{"single quotes literal", `A='a \n $b "c"'` + "\n", []string{`A=a \n $b "c"`}, ""},
		{"comment after quote", `A="x" # note` + "\n", []string{"A=x"}, ""},
		{"hash inside unquoted", "A=x#y\n", []string{"A=x#y"}, ""},
		{"equals in value", "URL=postgres://u:p@h/db?x=1\n", []string{"URL=postgres://u:p@h/db?x=1"}, ""},
		{"multi-line quote", "A=\"one\ntwo\"\nB=3\n", []string{"A=one\ntwo", "B=3"}, ""},
		{"later wins", "A=1\nB=2\nA=3\n", []string{"A=3", "B=2"}, ""},
		{"CRLF", "A=1\r\nB=2\r\n", []string{"A=1", "B=2"}, ""},
		{"no equals", "A=1\nJUSTAWORD\n", nil, `env_file :2: "JUSTAWORD" is not KEY=value`},
		{"bad key", "1A=x\n", nil, `:1: "1A=x" is not KEY=value`},
		{"unclosed quote", "A=\"open\nB=2\n", nil, ":1: A: the \" quote is never closed"},
		{"text after quote", "A=\"x\" y\n", nil, `:1: A: "y" follows the closing quote`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseEnv(tt.text)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("got %v, %v; want error %q", got, err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestReadEnvFiles(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.env"), filepath.Join(dir, "b.env")
	os.WriteFile(a, []byte("A=1\nB=1\n"), 0o600)
	os.WriteFile(b, []byte("B=2\n"), 0o600)
	missing := filepath.Join(dir, "missing.env")
	got, err := ReadEnvFiles([]EnvFile{{Path: a}, {Path: missing, Optional: true}, {Path: b}})
	if err != nil || !reflect.DeepEqual(got, []string{"A=1", "B=2"}) {
		t.Errorf("got %q, %v; want [A=1 B=2]", got, err)
	}
	_, err = ReadEnvFiles([]EnvFile{{Path: a}, {Path: missing}})
	want := "env_file " + missing + ": no such file; create it, or write the path as \"-" + missing + "\" if it is optional"
	if err == nil || err.Error() != want || !errors.Is(err, ErrEnvFile) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("got %v, want %q", err, want)
	}
	os.WriteFile(b, []byte("\n\nnope\n"), 0o600)
	_, err = ReadEnvFiles([]EnvFile{{Path: b}})
	if err == nil || !strings.HasPrefix(err.Error(), "env_file "+b+":3: ") {
		t.Errorf("got %v, want the file and line 3", err)
	}
}
