package units

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
)

// parsedOnce reports whether two loads of unit name gave the same parse:
// a cached spec is a copy of one parse, so its Command shares that
// parse's backing array; a parse anew allocates another.
func parsedOnce(a, b *Dir, name string) bool {
	return &a.Units[name].Command[0] == &b.Units[name].Command[0]
}

func trustNow(t *testing.T) {
	t.Helper()
	old := cacheTrust
	cacheTrust = -time.Hour // every file is old enough: the tests edit files within the same second
	t.Cleanup(func() { cacheTrust = old })
}

func cachedLoader(t *testing.T) *Loader {
	t.Helper()
	return &Loader{Cache: &Cache{}}
}

// trustedCache writes files as a units directory and returns it with a
// loader whose empty cache trusts every file at once (trustNow).
func trustedCache(t *testing.T, files map[string]string) (string, *Loader) {
	t.Helper()
	trustNow(t)
	return testkit.UnitsDir(t, files), cachedLoader(t)
}

func mustLoadDir(t *testing.T, l *Loader, dir string) *Dir {
	t.Helper()
	d, err := l.LoadDir(dir)
	if err != nil {
		t.Fatalf("LoadDir: %v", err)
	}
	return d
}

// atomicSave writes a file as editors do: a temporary file renamed onto it.
func atomicSave(t *testing.T, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".save.tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestCacheParsesOnlyChangedFiles(t *testing.T) {
	dir, l := trustedCache(t, map[string]string{
		"a.yaml": "command: [a]\n",
		"b.yaml": "command: [b]\nafter: [a]\n",
	})
	d1 := mustLoadDir(t, l, dir)
	d2 := mustLoadDir(t, l, dir)
	if !parsedOnce(d1, d2, "a") || !parsedOnce(d1, d2, "b") {
		t.Fatal("an unchanged file was parsed again")
	}
	atomicSave(t, filepath.Join(dir, "b.yaml"), "command: [b2]\nafter: [a]\n")
	d3 := mustLoadDir(t, l, dir)
	if got := d3.Units["b"].Command[0]; got != "b2" {
		t.Fatalf("after the save, b runs %q, want b2", got)
	}
	if !parsedOnce(d2, d3, "a") {
		t.Error("a was parsed again though only b changed")
	}
	// Without a cache every load parses anew: the observation above is
	// the cache's doing.
	var plain Loader
	if parsedOnce(mustLoadDir(t, &plain, dir), mustLoadDir(t, &plain, dir), "a") {
		t.Fatal("two loads without a cache shared a parse")
	}
}

// An in-place rewrite of the same size in the same tick of the file
// system's clock leaves every time as it was, so the identity of a file
// changed that recently cannot vouch for its content: it is parsed again
// at every load until it is older than cacheTrust.
func TestCacheRereadsRecentFiles(t *testing.T) {
	dir := testkit.UnitsDir(t, map[string]string{"a.yaml": "command: [x]\n"})
	l := cachedLoader(t)
	d1 := mustLoadDir(t, l, dir)
	if parsedOnce(d1, mustLoadDir(t, l, dir), "a") {
		t.Fatalf("a file changed under %v ago was taken from the cache", cacheTrust)
	}
	p := filepath.Join(dir, "a.yaml")
	if err := os.WriteFile(p, []byte("command: [y]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := mustLoadDir(t, l, dir).Units["a"].Command[0]; got != "y" {
		t.Fatalf("rewritten in place, a runs %q, want y", got)
	}
}

func TestCacheFollowsSymlinkSwap(t *testing.T) {
	trustNow(t)
	root := t.TempDir()
	dir := filepath.Join(root, "units")
	for _, d := range []string{dir, filepath.Join(dir, "..v1"), filepath.Join(dir, "..v2")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "..v1", "web.yaml"), "command: [v1]\n")
	write(filepath.Join(dir, "..v2", "web.yaml"), "command: [v2]\n")
	if err := os.Symlink("..v1", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..data/web.yaml", filepath.Join(dir, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	l := cachedLoader(t)
	if got := mustLoadDir(t, l, dir).Units["web"].Command[0]; got != "v1" {
		t.Fatalf("web runs %q, want v1", got)
	}
	if err := os.Symlink("..v2", filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if got := mustLoadDir(t, l, dir).Units["web"].Command[0]; got != "v2" {
		t.Fatalf("after the swap of ..data, web runs %q, want v2", got)
	}
}

func TestCacheForgetsOnNewDefaults(t *testing.T) {
	trustNow(t)
	dir := testkit.UnitsDir(t, map[string]string{"a.yaml": "command: [a]\n"})
	cache := &Cache{}
	d := BuiltinDefaults()
	l1 := &Loader{Cache: cache, Defaults: &d}
	s1 := mustLoadDir(t, l1, dir).Units["a"]
	d2 := d
	d2.Restart = RestartAlways
	l2 := &Loader{Cache: cache, Defaults: &d2}
	s2 := mustLoadDir(t, l2, dir).Units["a"]
	if s2.Restart != RestartAlways || s1.Restart == RestartAlways {
		t.Fatalf("restart: %v then %v, want the new default to apply", s1.Restart, s2.Restart)
	}
}

// A file that fails keeps failing from the cache, and the errors a load
// appends (a cross-unit rule) do not stick to the cached ones.
func TestCacheKeepsErrorsApart(t *testing.T) {
	dir, l := trustedCache(t, map[string]string{
		"bad.yaml": "command: [a]\nbogus: 1\n",
		"dep.yaml": "command: [a]\nafter: [nosuch]\n",
	})
	first := mustLoadDir(t, l, dir)
	for range 3 {
		d := mustLoadDir(t, l, dir)
		for _, n := range []string{"bad", "dep"} {
			if len(d.Failed[n]) != len(first.Failed[n]) || len(d.Failed[n]) == 0 {
				t.Fatalf("%s: %d errors, want %d as at first", n, len(d.Failed[n]), len(first.Failed[n]))
			}
		}
	}
}

// counts returns the files the loads with c looked at (a stat) and read
// since the last call.
func counts(c *Cache) (looked, read int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	looked, read = c.looked, c.read
	c.looked, c.read = 0, 0
	return looked, read
}

// TestCacheLooksOnlyAtChanges: told which files changed (Loader.Changes),
// a load of a directory of 1000 units after one edit looks at and reads
// that one file, and lists no directory: a file added or removed is
// found by its name. Files reached through a symbolic link are looked at
// every time (their target may change with no event), and a load that
// failed leaves the next one to look at everything.
func TestCacheLooksOnlyAtChanges(t *testing.T) {
	const n = 1000
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("u%04d.yaml", i)] = fmt.Sprintf("command: [u, %d]\n", i)
	}
	dir, l := trustedCache(t, files)
	c := l.Cache
	load := func(names ...string) *Dir {
		t.Helper()
		ll := *l
		ll.Changes = &Changes{Names: names}
		return mustLoadDir(t, &ll, dir)
	}
	load() // no listing yet: every file
	if looked, read := counts(c); looked != n || read != n {
		t.Fatalf("first load looked at %d files and read %d, want %d and %d", looked, read, n, n)
	}
	mustLoadDir(t, l, dir) // no Changes: every file looked at, none read
	if looked, read := counts(c); looked != n || read != 0 {
		t.Fatalf("a load without Changes looked at %d files and read %d, want %d and 0", looked, read, n)
	}

	atomicSave(t, filepath.Join(dir, "u0042.yaml"), "command: [u, edited]\n")
	d := load("u0042.yaml", ".save.tmp")
	if looked, read := counts(c); looked != 1 || read != 1 {
		t.Errorf("after one edit, the load looked at %d files and read %d, want 1 and 1", looked, read)
	}
	if got := d.Units["u0042"].Command[1]; got != "edited" {
		t.Errorf("u0042 runs %q after its edit, want edited", got)
	}
	if len(d.Units) != n {
		t.Errorf("%d units loaded, want %d", len(d.Units), n)
	}

	testkit.WriteUnits(t, dir, map[string]string{"new.yaml": "command: [new]\n"})
	if err := os.Remove(filepath.Join(dir, "u0007.yaml")); err != nil {
		t.Fatal(err)
	}
	d = load("new.yaml", "u0007.yaml")
	if d.Units["new"] == nil || d.Units["u0007"] != nil || len(d.Units) != n {
		t.Errorf("after adding new.yaml and removing u0007.yaml: new %v, u0007 %v, %d units; want new alone added", d.Units["new"] != nil, d.Units["u0007"] != nil, len(d.Units))
	}
	if looked, _ := counts(c); looked != 1 {
		t.Errorf("the load looked at %d files, want 1 (new.yaml)", looked)
	}

	if err := os.Symlink("u0001.yaml", filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	load("link.yaml")
	counts(c)
	load()
	if looked, read := counts(c); looked != 1 || read != 0 {
		t.Errorf("with a symbolic link, a load of no change looked at %d files and read %d, want 1 (the link) and 0", looked, read)
	}

	moved := dir + ".away"
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	ll := *l
	ll.Changes = &Changes{}
	if _, err := ll.LoadDir(dir); err == nil {
		t.Fatal("a load of a directory moved away did not fail")
	}
	if err := os.Rename(moved, dir); err != nil {
		t.Fatal(err)
	}
	load()
	if looked, _ := counts(c); looked != n+1 {
		t.Errorf("after a failed load, the next looked at %d files, want every one (%d)", looked, n+1)
	}
}

// TestChangesGiveTheSpecsAsTheyWere: after an edit among many files, a
// load told of it (Loader.Changes) gives the spec of every other unit as
// the last load gave it (the same *Spec, shared with the Cache: nothing
// was copied or checked again for it), and the edited unit's new spec.
func TestChangesGiveTheSpecsAsTheyWere(t *testing.T) {
	const n = 200
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("u%03d.yaml", i)] = fmt.Sprintf("command: [u, %d]\nafter: [u000]\n", i)
	}
	files["u000.yaml"] = "command: [first]\n"
	dir, l := trustedCache(t, files)
	told := *l
	told.Changes = &Changes{Names: []string{"u042.yaml"}}
	d1 := mustLoadDir(t, l, dir)
	atomicSave(t, filepath.Join(dir, "u042.yaml"), "command: [u, edited]\nafter: [u000]\n")
	d2 := mustLoadDir(t, &told, dir)
	if got := d2.Units["u042"].Command[1]; got != "edited" {
		t.Fatalf("u042 runs %q after its edit, want edited", got)
	}
	for name, s := range d1.Units {
		if name != "u042" && d2.Units[name] != s {
			t.Fatalf("%s: the load after the edit gave another spec, want the one the last load gave", name)
		}
	}
	if d1.Units["u042"] == d2.Units["u042"] || len(d2.Units) != n || !slices.Equal(d1.Order(), d2.Order()) {
		t.Errorf("after the edit: u042 the same spec %v, %d units, the same order %v; want a new spec, %d units, the same order",
			d1.Units["u042"] == d2.Units["u042"], len(d2.Units), slices.Equal(d1.Order(), d2.Order()), n)
	}
	if d1.Units["u042"].Command[1] != "42" {
		t.Errorf("the first load's spec of u042 runs %q, want 42 (specs are not changed by later loads)", d1.Units["u042"].Command[1])
	}
}

// TestChangesKeepTheRules: a load told which files changed gives what a
// load of the whole directory gives, through edits that keep the
// cross-unit rules as they were (the specs of the edited files are
// replaced) and edits that change them (after:, requires:, ports:, a
// broken file, a duplicate name, a file added or removed).
func TestChangesKeepTheRules(t *testing.T) {
	dir, l := trustedCache(t, map[string]string{
		"db.yaml":    "command: [db]\nports: [5432]\n",
		"web.yaml":   "command: [web]\nafter: [db]\nrequires: [cache]\n",
		"cache.yaml": "command: [cache]\nafter: [db]\n",
		"other.yaml": "command: [other]\nports: [8080]\n",
	})
	mustLoadDir(t, l, dir)
	for _, step := range []struct {
		name  string
		files map[string]string // "" removes the file
	}{
		{"a command", map[string]string{"web.yaml": "command: [web, 2]\nafter: [db]\nrequires: [cache]\n"}},
		{"a port declared on another line", map[string]string{"db.yaml": "# the database\ncommand: [db]\nports: [5432]\n"}},
		{"after: a unit that does not exist", map[string]string{"web.yaml": "command: [web]\nafter: [nosuch]\n"}},
		{"fixed", map[string]string{"web.yaml": "command: [web]\nafter: [db]\n"}},
		{"a cycle", map[string]string{"db.yaml": "command: [db]\nports: [5432]\nafter: [web]\n"}},
		{"no cycle", map[string]string{"db.yaml": "command: [db]\nports: [5432]\n"}},
		{"a port another unit holds", map[string]string{"cache.yaml": "command: [cache]\nafter: [db]\nports: [8080]\n"}},
		{"the holder edited", map[string]string{"other.yaml": "\ncommand: [other, 2]\nports: [8080]\n"}},
		{"the port given up", map[string]string{"cache.yaml": "command: [cache]\nafter: [db]\n"}},
		{"a broken file", map[string]string{"cache.yaml": "command: [cache]\nbogus: 1\n"}},
		{"mended", map[string]string{"cache.yaml": "command: [cache]\n"}},
		{"a duplicate name", map[string]string{"cache.yml": "command: [cache, 2]\n"}},
		{"one of the two removed", map[string]string{"cache.yml": ""}},
		{"a unit added", map[string]string{"new.yaml": "command: [new]\nafter: [web]\n"}},
		{"a unit removed that another names", map[string]string{"web.yaml": ""}},
	} {
		var names []string
		for f, content := range step.files {
			names = append(names, f)
			p := filepath.Join(dir, f)
			if content == "" {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				continue
			}
			atomicSave(t, p, content)
		}
		told := *l
		told.Changes = &Changes{Names: names}
		got := mustLoadDir(t, &told, dir)
		want := mustLoadDir(t, &Loader{}, dir)
		if diff := dirDiff(got, want); diff != "" {
			t.Errorf("%s: the load told of the change differs from a load of everything: %s", step.name, diff)
		}
	}
}

// dirDiff says how a and b differ, "" when they do not.
func dirDiff(a, b *Dir) string {
	errs := func(d *Dir) []string {
		var out []string
		for _, e := range d.Errors() {
			out = append(out, e.Error())
		}
		return out
	}
	specs := func(d *Dir) map[string]Spec {
		out := map[string]Spec{}
		for n, s := range d.Units {
			out[n] = *s
		}
		return out
	}
	switch {
	case !reflect.DeepEqual(specs(a), specs(b)):
		return fmt.Sprintf("units %v, want %v", sortedKeys(a.Units), sortedKeys(b.Units))
	case !slices.Equal(a.Order(), b.Order()):
		return fmt.Sprintf("order %v, want %v", a.Order(), b.Order())
	case !inOrder(a) || !inOrder(b):
		return fmt.Sprintf("specs in order: %t and %t, want the units' specs in their order", inOrder(a), inOrder(b))
	case !slices.Equal(errs(a), errs(b)):
		return fmt.Sprintf("errors %q, want %q", errs(a), errs(b))
	case !reflect.DeepEqual(a.Ports, b.Ports):
		return fmt.Sprintf("ports %v, want %v", a.Ports, b.Ports)
	case !slices.Equal(sortedKeys(a.Contested), sortedKeys(b.Contested)):
		return fmt.Sprintf("contested %v, want %v", sortedKeys(a.Contested), sortedKeys(b.Contested))
	}
	return ""
}

// inOrder reports whether d.Specs holds d.Units's specs, in d.Order.
func inOrder(d *Dir) bool {
	return slices.EqualFunc(d.Specs(), d.Order(), func(s *Spec, n string) bool { return s == d.Units[n] }) && len(d.Units) == len(d.Specs())
}
