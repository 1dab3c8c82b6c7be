package units

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
			want:  "{dir}/web.yaml:1:1: YAML syntax: did not find expected ',' or ']'",
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
			want: `{dir}/web.yaml:2:9: ports: 8080 is also declared by unit "api"; two units cannot hold one port`,
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
			dir := writeDir(t, files)
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
