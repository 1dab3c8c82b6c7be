package units

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-units/hermes/internal/testkit"
)

// loadDir loads the units directory dir, which must load (with or
// without failed units).
func loadDir(t *testing.T, dir string) *Dir {
	t.Helper()
	d, err := LoadDir(dir)
	if err != nil {
		t.Fatalf("LoadDir: %v", err)
	}
	return d
}

func TestLoadDir(t *testing.T) {
	dir := testkit.UnitsDir(t, map[string]string{
		"db.yaml":        "shell: sleep 100\nports: [5432]\n",
		"web.yml":        "command: [a]\nafter: [db]\nrequires: [cache]\n",
		"cache.yaml":     "command: [a]\nafter: [db]\n",
		"broken.yaml":    "command: [a]\nownership: adoptable\n",
		"uses-bad.yaml":  "command: [a]\nafter: [broken]\n",
		"orphan.yaml":    "command: [a]\nafter: [nosuch]\n",
		"typo.yaml":      "command: [a]\nrequires: [dbb]\n",
		"port-dup.yaml":  "command: [a]\nports: [9000, 5432]\n",
		".hidden.yaml":   "garbage: [",
		".web.yml.swp":   "garbage",
		"web.yml~":       "garbage",
		"4913":           "garbage",
		".#cache.yaml":   "garbage",
		"README.md":      "not a unit",
		"cyc-a.yaml":     "command: [a]\nafter: [cyc-b]\n",
		"cyc-b.yaml":     "command: [a]\nrequires: [cyc-c]\n",
		"cyc-c.yaml":     "command: [a]\nafter: [cyc-a]\n",
		"after-cyc.yaml": "command: [a]\nafter: [cyc-a]\n",
	})
	d := loadDir(t, dir)
	loaded := sortedKeys(d.Units)
	if want := []string{"after-cyc", "cache", "db", "uses-bad", "web"}; !reflect.DeepEqual(loaded, want) {
		t.Errorf("loaded %v, want %v", loaded, want)
	}
	if got, want := d.Order(), []string{"after-cyc", "db", "cache", "uses-bad", "web"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Order() = %v, want %v", got, want)
	}
	wantErrs := []struct {
		unit      string
		line, col int
		msg       string
		is        error
	}{
		{"broken", 2, 12, "every survivor has a written reason", ErrInvalid},
		{"orphan", 2, 9, `after: no unit "nosuch" in ` + dir, ErrDependency},
		{"typo", 2, 12, `requires: no unit "dbb"`, ErrDependency},
		{"typo", 2, 12, `did you mean "db"?`, ErrDependency},
		{"port-dup", 2, 15, `ports: 5432 is also declared by unit "db"`, ErrDependency},
		{"cyc-a", 2, 9, "dependency cycle: cyc-a -> cyc-b -> cyc-c -> cyc-a", ErrDependency},
		{"cyc-b", 2, 12, "dependency cycle: cyc-a -> cyc-b -> cyc-c -> cyc-a", ErrDependency},
		{"cyc-c", 2, 9, "dependency cycle: cyc-a -> cyc-b -> cyc-c -> cyc-a", ErrDependency},
	}
	for _, w := range wantErrs {
		found := false
		for _, e := range d.Failed[w.unit] {
			if e.Line == w.line && e.Column == w.col && strings.Contains(e.Msg, w.msg) && errors.Is(e, w.is) {
				found = true
			}
		}
		if !found {
			t.Errorf("unit %s: errors %v, want one at %d:%d containing %q", w.unit, d.Failed[w.unit], w.line, w.col, w.msg)
		}
	}
	if got := sortedKeys(d.Failed); !reflect.DeepEqual(got, []string{"broken", "cyc-a", "cyc-b", "cyc-c", "orphan", "port-dup", "typo"}) {
		t.Errorf("failed units %v", got)
	}
	all := d.Errors()
	if !slices.IsSortedFunc(all, func(a, b *Error) int { return strings.Compare(a.File, b.File) }) {
		t.Errorf("Errors() not sorted by file: %v", all)
	}
	if d.Units["web"].File != filepath.Join(dir, "web.yml") {
		t.Errorf("web File = %q, want the absolute path of web.yml", d.Units["web"].File)
	}
}

func TestLoadDirDuplicateName(t *testing.T) {
	dir := testkit.UnitsDir(t, map[string]string{"a.yaml": "command: [a]\n", "a.yml": "command: [b]\n"})
	d := loadDir(t, dir)
	if _, ok := d.Units["a"]; ok {
		t.Errorf("unit a loaded from one of two files, want it failed")
	}
	if es := d.Failed["a"]; len(es) != 1 || !errors.Is(es[0], ErrDependency) || !strings.Contains(es[0].Msg, "is also defined by") {
		t.Errorf("got %v, want one error naming the other file", es)
	}
}

func TestLoadRefusals(t *testing.T) {
	dir := testkit.UnitsDir(t, map[string]string{"ok.yaml": "command: [a]\n"})
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "nowhere.yaml"), filepath.Join(dir, "dangling.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "ok.yaml"), filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		is   error
		msg  string
	}{
		{"a directory", filepath.Join(dir, "sub.yaml"), ErrFile, "is a directory"},
		{"a dangling symlink", filepath.Join(dir, "dangling.yaml"), ErrFile, "dangling symlink to " + filepath.Join(dir, "nowhere.yaml")},
		{"a missing file", filepath.Join(dir, "none.yaml"), fs.ErrNotExist, "no such file"},
		{"not a unit name", filepath.Join(dir, "x.json"), ErrFile, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := (&Loader{}).Load(tt.path)
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, tt.is) || !strings.Contains(e.Msg, tt.msg) || e.File != tt.path {
				t.Errorf("Load(%s) = %v, want %v naming the file, containing %q", tt.path, err, tt.is, tt.msg)
			}
		})
	}
	if s, err := (&Loader{}).Load(filepath.Join(dir, "link.yaml")); err != nil || s.Name != "link" {
		t.Errorf("Load(symlink to a unit) = %v, %v; want unit link", s, err)
	}
	d := loadDir(t, dir)
	if _, ok := d.Units["ok"]; !ok {
		t.Errorf("ok.yaml not loaded next to bad entries: %v", d.Errors())
	}
	for _, name := range []string{"sub", "dangling"} {
		if len(d.Failed[name]) != 1 || !errors.Is(d.Failed[name][0], ErrFile) {
			t.Errorf("%s: got %v, want one ErrFile error", name, d.Failed[name])
		}
	}
	if _, err := LoadDir(filepath.Join(dir, "ok.yaml")); !errors.Is(err, ErrFile) {
		t.Errorf("LoadDir(a file) = %v, want ErrFile", err)
	}
	if _, err := LoadDir(filepath.Join(dir, "none")); !errors.Is(err, ErrFile) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadDir(missing) = %v, want ErrFile and fs.ErrNotExist", err)
	}
}

func TestSecurity(t *testing.T) {
	tests := []struct {
		name     string
		dirMode  fs.FileMode
		fileMode fs.FileMode
		chown    bool // the unit file belongs to another user
		bad      string
		msg      string
	}{
		{"file writable by others", 0o700, 0o646, false, "file", "file mode 0646 is writable by others: anyone who can write a unit runs commands as you; fix with `chmod go-w "},
		{"file writable by group", 0o700, 0o660, false, "file", "file mode 0660 is writable by group"},
		{"directory writable by group and others", 0o777, 0o600, false, "dir", "units directory mode 0777 is writable by group and others"},
		{"file owned by another user", 0o700, 0o600, true, "file", "is owned by uid 4242, not by you"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := testkit.UnitsDir(t, map[string]string{"web.yaml": "command: [a]\n"})
			file := filepath.Join(dir, "web.yaml")
			if tt.chown {
				if os.Geteuid() != 0 {
					t.Skip("giving a file to another user needs root; the mode checks cover the rest")
				}
				if err := os.Chown(file, 4242, 4242); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Chmod(file, tt.fileMode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, tt.dirMode); err != nil {
				t.Fatal(err)
			}
			want := file
			if tt.bad == "dir" {
				want = dir
			}
			_, err := (&Loader{}).Load(file)
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrInsecure) || e.File != want || !strings.Contains(e.Msg, tt.msg) {
				t.Errorf("Load = %v, want ErrInsecure for %s containing %q", err, want, tt.msg)
			}
			if !strings.Contains(err.Error(), "--insecure-units") {
				t.Errorf("error %q does not name the override", err)
			}
			d, err := LoadDir(dir)
			switch tt.bad {
			case "dir":
				if !errors.Is(err, ErrInsecure) {
					t.Errorf("LoadDir = %v, want ErrInsecure", err)
				}
			case "file":
				if err != nil || len(d.Failed["web"]) != 1 || !errors.Is(d.Failed["web"][0], ErrInsecure) {
					t.Errorf("LoadDir: %v, failed %v; want web failed with ErrInsecure", err, d.Failed)
				}
			}
			l := &Loader{Insecure: true}
			if _, err := l.Load(file); err != nil {
				t.Errorf("Insecure Load = %v, want success", err)
			}
			if d, err := l.LoadDir(dir); err != nil || d.Units["web"] == nil {
				t.Errorf("Insecure LoadDir = %v, want web loaded", err)
			}
		})
	}
}

// TestOrderSmallestReadyFirst: the start order of a random graph takes,
// at each step, the smallest name whose dependencies are all placed (the
// order of every earlier release), whatever the number of units ready.
func TestOrderSmallestReadyFirst(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for trial := range 20 {
		d := &Dir{Units: map[string]*Spec{}}
		n := 50 + rnd.IntN(200)
		for range n {
			// Dependencies on random names: some are no unit, some make
			// cycles, whose units neither order places.
			s := &Spec{Name: fmt.Sprintf("u%03d", rnd.IntN(1000))}
			for range rnd.IntN(3) {
				s.After = append(s.After, fmt.Sprintf("u%03d", rnd.IntN(1000)))
			}
			d.Units[s.Name] = s
		}
		got, want := d.sortOrder(), smallestReadyFirst(d)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: order %v, want %v", trial, got, want)
		}
	}
}

// smallestReadyFirst is the start order by definition: repeatedly the
// smallest unplaced name whose dependencies (deps) are all placed.
func smallestReadyFirst(d *Dir) []string {
	placed := map[string]bool{}
	var out []string
	for len(out) < len(d.Units) {
		next := ""
		for _, n := range sortedKeys(d.Units) {
			if !placed[n] && !slices.ContainsFunc(d.deps(n), func(m string) bool { return !placed[m] }) {
				next = n
				break
			}
		}
		if next == "" {
			break // a cycle: what is left is not ordered
		}
		placed[next] = true
		out = append(out, next)
	}
	return out
}
