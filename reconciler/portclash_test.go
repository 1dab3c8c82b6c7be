package reconciler

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/units"
)

// runDir runs a reconciler on the units directory dir, on a fake
// spawner, until the test ends; it returns once the first pass is done.
// Call it inside a synctest bubble.
func runDir(t *testing.T, dir string) (*Reconciler, *fakeSpawner) {
	t.Helper()
	sp := &fakeSpawner{fail: map[string]error{}}
	o := fakeOptions(t, sp, LoadDir(&units.Loader{}, dir))
	o.UnitsDir = dir
	r := mustNew(t, o)
	runInTest(t, r)
	synctest.Wait()
	return r, sp
}

// TestPortClashFailsTheNewcomer: a unit added with a port a running unit
// declares fails, naming the holder and both declarations, whatever the
// names' order (LoadDir alone fails the later name); the holder runs on.
// Once the holder is edited to another port, the newcomer starts.
func TestPortClashFailsTheNewcomer(t *testing.T) {
	for _, tc := range []struct{ holder, added string }{
		{"a", "b"}, // the name order agrees
		{"z", "b"}, // the name order alone would fail the running z
	} {
		t.Run(tc.holder+" runs, "+tc.added+" is added", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				unit := func(port string) string { return "command: [/bin/sleep, \"100\"]\nports: [" + port + "]\n" }
				dir := testkit.UnitsDir(t, map[string]string{tc.holder + ".yaml": unit("8080")})
				r, sp := runDir(t, dir)

				testkit.WriteUnits(t, dir, map[string]string{tc.added + ".yaml": unit("8080")})
				reloadNow(t, r)
				if n := len(sp.spawnTimes(tc.holder)); n != 1 {
					t.Errorf("%s spawned %d times, want 1: it keeps running", tc.holder, n)
				}
				if st, _ := stateOf(t, r, tc.holder); st != Running {
					t.Errorf("%s is %v, want running", tc.holder, st)
				}
				if n := len(sp.spawnTimes(tc.added)); n != 0 {
					t.Errorf("%s spawned %d times, want 0: its port is taken", tc.added, n)
				}
				want := filepath.Join(dir, tc.added+".yaml") + `:2:9: ports: 8080 is also declared by unit "` + tc.holder + `" at ` +
					filepath.Join(dir, tc.holder+".yaml") + `:2:9; two units cannot hold one port, and ` + tc.added + ` fails: ` +
					tc.holder + ` declared it first; give one of them another port`
				if got := configErrors(t, r); !slices.Equal(got, []string{want}) {
					t.Errorf("config errors\n%q\nwant\n%q", got, want)
				}

				testkit.WriteUnits(t, dir, map[string]string{tc.holder + ".yaml": unit("8081")})
				reloadNow(t, r)
				if n := len(sp.spawnTimes(tc.added)); n != 1 {
					t.Errorf("%s spawned %d times once %s gave the port up, want 1", tc.added, n, tc.holder)
				}
				for _, u := range []string{tc.holder, tc.added} {
					if st, msg := stateOf(t, r, u); st != Running {
						t.Errorf("%s is %v (%s), want running", u, st, msg)
					}
				}
				if got := configErrors(t, r); len(got) != 0 {
					t.Errorf("config errors %q, want none", got)
				}
			})
		})
	}
}

// TestPortClashAtStart: at a cold start, of two new units on one port the
// later name fails, and says why.
func TestPortClashAtStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := testkit.UnitsDir(t, map[string]string{
			"web.yaml": "command: [/bin/sleep, \"100\"]\nports: [8080]\n",
			"api.yaml": "command: [/bin/sleep, \"100\"]\nports: [8080]\n",
		})
		r, sp := runDir(t, dir)
		if a, w := len(sp.spawnTimes("api")), len(sp.spawnTimes("web")); a != 1 || w != 0 {
			t.Errorf("api spawned %d times, web %d; want 1 and 0", a, w)
		}
		if got := configErrors(t, r); len(got) != 1 || !strings.Contains(got[0], "and the later name, web, fails") {
			t.Errorf("config errors %q, want one saying the later name, web, fails", got)
		}
	})
}

// TestSettlePorts: how settlePorts ranks the two sides of a clash by what
// the reconciler has (declared), and that it leaves its input alone.
func TestSettlePorts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		declared map[string][]int
		want     []string // the units of the settled Specs
	}{
		{"both new: the later name fails", nil, []string{"a", "other"}},
		{"the unit it has keeps the port", map[string][]int{"z": {80}}, []string{"other", "z"}},
		{"changed elsewhere, it still declared the port first", map[string][]int{"z": {80, 81}}, []string{"other", "z"}},
		{"changed to the port: both new claims", map[string][]int{"z": {81}}, []string{"a", "other"}},
		{"both had it: the later name fails", map[string][]int{"a": {80}, "z": {80}}, []string{"a", "other"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testkit.UnitsDir(t, map[string]string{
				"a.yaml":     "command: [a]\nports: [80]\n",
				"z.yaml":     "command: [a]\nports: [80]\n",
				"other.yaml": "command: [a]\n",
			})
			l, err := LoadDir(&units.Loader{}, dir)(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Specs) != 3 || len(l.Errors) != 0 {
				t.Fatalf("LoadDir gave %d specs and errors %v, want both sides of the clash and no error", len(l.Specs), l.Errors)
			}
			before := slices.Clone(l.Specs)
			declared := func(n string) ([]int, bool) { p, ok := tc.declared[n]; return p, ok }
			got := settlePorts(l, declared)
			var names []string
			for _, s := range got.Specs {
				names = append(names, s.Name)
			}
			slices.Sort(names)
			if !slices.Equal(names, tc.want) {
				t.Errorf("settled specs %v, want %v", names, tc.want)
			}
			if len(got.Errors) != 1 {
				t.Errorf("errors %v, want one", got.Errors)
			}
			if again := settlePorts(got, declared); len(again.Specs) != len(got.Specs) || len(again.Errors) != len(got.Errors) {
				t.Errorf("settling again gave %d specs, %d errors; want it unchanged", len(again.Specs), len(again.Errors))
			}
			for i := range before {
				if l.Specs[i].Name != before[i].Name {
					t.Errorf("settlePorts changed its input's Specs")
				}
			}
		})
	}
}

func configErrors(t *testing.T, r *Reconciler) []string {
	t.Helper()
	st, err := r.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return errStrings(st.ConfigErrors)
}

func errStrings(es []control.ConfigError) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, e.String())
	}
	return out
}
