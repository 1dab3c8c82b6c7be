package units

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-units/hermes/internal/testkit"
)

// TestBadInputCatalogue is the unit-file half of the bad-input catalogue
// (docs/bad-input.md): for each case, the exact error a user gets from a
// units directory, and that the other units of the directory still load.
// {dir} stands for the units directory. Keep the messages here and in the
// page in step: the page quotes them.
func TestBadInputCatalogue(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string              // web.yaml is the unit under test unless setup makes it
		setup func(t *testing.T, dir string) // after files are written
		unit  string                         // the unit that fails
		want  string                         // every error of unit, one per line
		is    error
	}{
		{
			name:  "YAML syntax error",
			files: map[string]string{"web.yaml": "command: [python3, -m, http.server\nports: [8080]\n"},
			unit:  "web",
			want:  "{dir}/web.yaml:1:10: YAML syntax: this [ is never closed (did not find expected ',' or ']')",
			is:    ErrInvalid,
		},
		{
			name:  "YAML syntax error on line 2",
			files: map[string]string{"web.yaml": "command: [a]\nports: [8080,\nrestart: always\n"},
			unit:  "web",
			want:  "{dir}/web.yaml:2:8: YAML syntax: this [ is never closed (did not find expected ',' or ']')",
			is:    ErrInvalid,
		},
		{
			name:  "tab in indentation",
			files: map[string]string{"web.yaml": "command: [a]\nenv:\n  A: b\n\tB: c\n"},
			unit:  "web",
			want:  "{dir}/web.yaml:4:1: YAML syntax: tabs are not allowed for indentation; use spaces",
			is:    ErrInvalid,
		},
		{
			name:  "camelCase key",
			files: map[string]string{"web.yaml": "command: [a]\nrestartSec: 2\n"},
			unit:  "web",
			want:  `{dir}/web.yaml:2:1: unknown key "restartSec"; did you mean "restart_sec"?`,
			is:    ErrInvalid,
		},
		{
			name:  "kebab-case key",
			files: map[string]string{"web.yaml": "command: [a]\ntimeouts: {runtime-max: 5}\n"},
			unit:  "web",
			want:  `{dir}/web.yaml:2:12: timeouts: unknown key "runtime-max"; did you mean "runtime_max"?`,
			is:    ErrInvalid,
		},
		{
			name:  "wrong type",
			files: map[string]string{"web.yaml": "command: [a]\nports: eighty\n"},
			unit:  "web",
			want:  `{dir}/web.yaml:2:8: ports: want a list of port numbers, like [8080], got "eighty"`,
			is:    ErrInvalid,
		},
		{
			name:  "unknown key",
			files: map[string]string{"web.yaml": "command: [a]\nrestat: always\n"},
			unit:  "web",
			want:  `{dir}/web.yaml:2:1: unknown key "restat"; did you mean "restart"?`,
			is:    ErrInvalid,
		},
		{
			name:  "survivor without reason",
			files: map[string]string{"web.yaml": "command: [a]\nownership: persist_on_release\n"},
			unit:  "web",
			want:  `{dir}/web.yaml:2:12: ownership: persist_on_release needs a non-empty reason: — every survivor has a written reason; add reason: "why it must outlive its owner"`,
			is:    ErrInvalid,
		},
		{
			name: "dependency cycle",
			files: map[string]string{
				"web.yaml": "command: [a]\nafter: [db]\n",
				"db.yaml":  "command: [a]\nrequires: [web]\n",
			},
			unit: "web",
			want: "{dir}/web.yaml:2:9: dependency cycle: db -> web -> db; remove one of these after:/requires: entries",
			is:   ErrDependency,
		},
		{
			name:  "dependency on a missing unit",
			files: map[string]string{"web.yaml": "command: [a]\nrequires: [postgres]\n"},
			unit:  "web",
			want:  `{dir}/web.yaml:2:12: requires: no unit "postgres" in {dir} (add postgres.yaml, or remove it from requires:)`,
			is:    ErrDependency,
		},
		{
			name: "duplicate port (two units)",
			files: map[string]string{
				"api.yaml": "command: [a]\nports: [8080]\n",
				"web.yaml": "command: [a]\nports: [8080]\n",
			},
			unit: "web",
			want: `{dir}/web.yaml:2:9: ports: 8080 is also declared by unit "api" at {dir}/api.yaml:2:9; two units cannot hold one port, and the later name, web, fails; give one of them another port`,
			is:   ErrDependency,
		},
		{
			name:  "unit file world-writable",
			files: map[string]string{"web.yaml": "command: [a]\n"},
			setup: func(t *testing.T, dir string) { chmod(t, filepath.Join(dir, "web.yaml"), 0o666) },
			unit:  "web",
			want:  "{dir}/web.yaml: file mode 0666 is writable by group and others: anyone who can write a unit runs commands as you; fix with `chmod go-w {dir}/web.yaml` (or pass --insecure-units to load it anyway)",
			is:    ErrInsecure,
		},
		{
			name: "unit file replaced by a directory",
			setup: func(t *testing.T, dir string) {
				if err := os.Mkdir(filepath.Join(dir, "web.yaml"), 0o700); err != nil {
					t.Fatal(err)
				}
			},
			unit: "web",
			want: "{dir}/web.yaml: is a directory, not a file; give a .yaml file (or pass the directory where a directory is expected)",
			is:   ErrFile,
		},
		{
			name: "dangling symlink",
			setup: func(t *testing.T, dir string) {
				if err := os.Symlink(filepath.Join(dir, "gone", "web.yaml"), filepath.Join(dir, "web.yaml")); err != nil {
					t.Fatal(err)
				}
			},
			unit: "web",
			want: "{dir}/web.yaml: dangling symlink to {dir}/gone/web.yaml: its target does not exist; fix or remove the link",
			is:   ErrFile,
		},
		{
			name:  "empty file",
			files: map[string]string{"web.yaml": ""},
			unit:  "web",
			want:  "{dir}/web.yaml:1:1: empty file: a unit needs at least command: or shell:",
			is:    ErrInvalid,
		},
		{
			name: "a 10 MB file",
			setup: func(t *testing.T, dir string) {
				big := bytes.Repeat([]byte("# a log renamed to .yaml\n"), 10<<20/25+1)
				if err := os.WriteFile(filepath.Join(dir, "web.yaml"), big, 0o600); err != nil {
					t.Fatal(err)
				}
			},
			unit: "web",
			want: "{dir}/web.yaml: file is 10485775 bytes, over the 1048576-byte limit; is it the right file?",
			is:   ErrFile,
		},
		{
			name:  "time zone prefix without fields (crashed the cron parser)",
			files: map[string]string{"web.yaml": "command: [a]\nschedule: \"TZ=\"\n"},
			unit:  "web",
			want:  `{dir}/web.yaml:2:11: schedule: "TZ=" is not a 5-field cron expression (minute hour day-of-month month day-of-week, like "*/15 * * * *"): time zone prefix "TZ=" is not followed by the 5 fields`,
			is:    ErrInvalid,
		},
		{
			name:  "duration over its bound (overflowed into immediate restarts)",
			files: map[string]string{"web.yaml": "command: [a]\nrestart_sec: 2562047h\n"},
			unit:  "web",
			want:  "{dir}/web.yaml:2:14: restart_sec: 2562047h is out of range; allowed: 0s to 24h",
			is:    ErrInvalid,
		},
		{
			name:  "count over its bound (hung the reconciler)",
			files: map[string]string{"web.yaml": "command: [a]\nlog: {keep: 2000000000}\n"},
			unit:  "web",
			want:  "{dir}/web.yaml:2:13: log.keep: 2000000000 is out of range; allowed: 0 to 100",
			is:    ErrInvalid,
		},
		{
			name:  "NUL in a command argument (loaded, then failed every retry)",
			files: map[string]string{"web.yaml": "command: [a, \"b\\0c\"]\n"},
			unit:  "web",
			want:  `{dir}/web.yaml:1:14: command: item 2 holds a NUL byte (\0), which no program argument can carry; remove it`,
			is:    ErrInvalid,
		},
		{
			name:  "schedule that never fires",
			files: map[string]string{"web.yaml": "command: [a]\nschedule: \"0 0 31 2 *\"\n"},
			unit:  "web",
			want:  `{dir}/web.yaml:2:11: schedule: "0 0 31 2 *" never fires: no date matches its day-of-month, month and day-of-week (like February 31st); fix those fields`,
			is:    ErrInvalid,
		},
		{
			name: "symlink loop",
			setup: func(t *testing.T, dir string) {
				if err := os.Symlink(filepath.Join(dir, "web.link"), filepath.Join(dir, "web.yaml")); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join(dir, "web.yaml"), filepath.Join(dir, "web.link")); err != nil {
					t.Fatal(err)
				}
			},
			unit: "web",
			want: "{dir}/web.yaml: symlink loop: the link to {dir}/web.link leads back to itself (or through more than 40 links); fix or remove the link",
			is:   ErrFile,
		},
		{
			name:  "a 270 KB garbage scalar (was echoed whole into every status)",
			files: map[string]string{"web.yaml": "command: [a]\nports: " + strings.Repeat("garbage", 270<<10/7) + "\n"},
			unit:  "web",
			want:  `{dir}/web.yaml:2:8: ports: want a list of port numbers, like [8080], got "garbagegarbagegarbagegarbagegarbagegarbagegarbagegarbagegarbageg"… (276479 bytes)`,
			is:    ErrInvalid,
		},
		{
			name:  "invalid UTF-8",
			files: map[string]string{"web.yaml": "command: [a]\ndescription: caf\xe9 latin-1\n"},
			unit:  "web",
			want:  "{dir}/web.yaml:2:17: invalid UTF-8: save the file as UTF-8",
			is:    ErrInvalid,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"other.yaml": "command: [a]\n"}
			for k, v := range tt.files {
				files[k] = v
			}
			dir := testkit.UnitsDir(t, files)
			if tt.setup != nil {
				tt.setup(t, dir)
			}
			d, err := LoadDir(dir)
			if err != nil {
				t.Fatalf("LoadDir: %v, want the directory loaded with %s failed", err, tt.unit)
			}
			errs := d.Failed[tt.unit]
			if got, want := errs.Error(), strings.ReplaceAll(tt.want, "{dir}", dir); got != want {
				t.Errorf("error of %s:\ngot  %s\nwant %s", tt.unit, got, want)
			}
			if !errors.Is(errs, tt.is) {
				t.Errorf("errors.Is(%v, %v) = false", errs, tt.is)
			}
			if _, ok := d.Units[tt.unit]; ok {
				t.Errorf("%s loaded; want it failed", tt.unit)
			}
			if _, ok := d.Units["other"]; !ok {
				t.Errorf("other.yaml did not load next to the bad file: failed %v", d.Failed)
			}
		})
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// TestChownAdvicePastes: the fix a unit directory owned by another user
// gets is a command that runs as printed, in a path with a space, a quote
// and a dollar sign (it used to read `chown root (uid 0) /path`, which no
// shell takes).
func TestChownAdvicePastes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a directory to another user needs root; TestShellWord covers the quoting")
	}
	dir := filepath.Join(t.TempDir(), "it's my $HOME units")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	_, err := LoadDir(dir)
	if !errors.Is(err, ErrInsecure) {
		t.Fatalf("LoadDir = %v, want ErrInsecure", err)
	}
	msg := err.Error()
	start, end := strings.Index(msg, "`chown "), strings.LastIndex(msg, "`")
	if start < 0 || end <= start {
		t.Fatalf("error %q has no `chown ...` advice", msg)
	}
	advice := msg[start+1 : end]
	if out, err := exec.Command("/bin/sh", "-c", advice).CombinedOutput(); err != nil {
		t.Fatalf("pasting %s: %v\n%s", advice, err, out)
	}
	if _, err := LoadDir(dir); err != nil {
		t.Errorf("after running %s: LoadDir = %v, want the directory accepted", advice, err)
	}
}

func TestShellWord(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"/srv/units/web.yaml", "/srv/units/web.yaml"},
		{"alice", "alice"},
		{"/srv/my units", "'/srv/my units'"},
		{"/srv/it's", `'/srv/it'\''s'`},
		{"/srv/$HOME;rm", "'/srv/$HOME;rm'"},
		{"", "''"},
	} {
		if got := shellWord(tt.in); got != tt.want {
			t.Errorf("shellWord(%q) = %s, want %s", tt.in, got, tt.want)
		}
		if out, err := exec.Command("/bin/sh", "-c", "printf %s "+shellWord(tt.in)).Output(); err != nil || string(out) != tt.in {
			t.Errorf("sh printed %q (%v) for %s, want %q", out, err, shellWord(tt.in), tt.in)
		}
	}
}
