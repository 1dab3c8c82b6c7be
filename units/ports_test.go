package units

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hermes-units/hermes/internal/testkit"
)

// TestPortsSettle: who holds a port two units declare, by rank then name;
// a unit that fails holds none of its ports, so it blocks no third unit.
func TestPortsSettle(t *testing.T) {
	claim := func(port, line int, unit string) Claim {
		return Claim{Port: port, File: "/u/" + unit + ".yaml", Line: line, Column: 9}
	}
	ranked := func(first ...string) func(string) Rank {
		return func(n string) Rank {
			for _, f := range first {
				if f == n {
					return Rank{Why: "was there first"}
				}
			}
			return Rank{Tier: 1}
		}
	}
	for _, tc := range []struct {
		name  string
		ports Ports
		rank  func(string) Rank
		want  map[string][]string // failing unit -> its messages
	}{
		{
			name:  "no clash",
			ports: Ports{"a": {claim(80, 2, "a")}, "b": {claim(81, 2, "b")}},
			want:  map[string][]string{},
		},
		{
			name:  "the later name fails",
			ports: Ports{"a": {claim(80, 2, "a")}, "b": {claim(80, 3, "b")}},
			want: map[string][]string{"b": {
				`/u/b.yaml:3:9: ports: 80 is also declared by unit "a" at /u/a.yaml:2:9; two units cannot hold one port, and the later name, b, fails; give one of them another port`}},
		},
		{
			name:  "a unit ranked first keeps it whatever its name",
			ports: Ports{"a": {claim(80, 2, "a")}, "z": {claim(80, 4, "z")}},
			rank:  ranked("z"),
			want: map[string][]string{"a": {
				`/u/a.yaml:2:9: ports: 80 is also declared by unit "z" at /u/z.yaml:4:9; two units cannot hold one port, and a fails: z was there first; give one of them another port`}},
		},
		{
			name:  "of one rank, the later name fails",
			ports: Ports{"a": {claim(80, 2, "a")}, "b": {claim(80, 2, "b")}, "z": {claim(81, 2, "z")}},
			rank:  ranked("z"),
			want:  map[string][]string{"b": {`the later name, b, fails`}},
		},
		{
			name: "a failed unit holds none of its ports",
			ports: Ports{
				"a": {claim(80, 2, "a")},
				"b": {claim(80, 2, "b"), claim(81, 3, "b")},
				"c": {claim(81, 2, "c")},
			},
			want: map[string][]string{"b": {`ports: 80 is also declared by unit "a"`}},
		},
		{
			name:  "an error at each port lost",
			ports: Ports{"a": {claim(80, 2, "a"), claim(81, 3, "a")}, "b": {claim(81, 2, "b"), claim(80, 3, "b")}},
			want: map[string][]string{"b": {
				`/u/b.yaml:2:9: ports: 81 is also declared by unit "a" at /u/a.yaml:3:9`,
				`/u/b.yaml:3:9: ports: 80 is also declared by unit "a" at /u/a.yaml:2:9`}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(tc.ports)
			got := tc.ports.Settle(tc.rank)
			if names, want := sortedKeys(got), sortedKeys(tc.want); !reflect.DeepEqual(names, want) {
				t.Fatalf("failed units %v, want %v (errors %v)", names, want, got)
			}
			for n, msgs := range tc.want {
				if len(got[n]) != len(msgs) {
					t.Fatalf("%s: %d errors %v, want %d", n, len(got[n]), got[n], len(msgs))
				}
				for i, m := range msgs {
					if e := got[n][i]; !strings.Contains(e.Error(), m) || !errors.Is(e, ErrDependency) {
						t.Errorf("%s: error %d is %q, want it to contain %q and match ErrDependency", n, i, e, m)
					}
				}
			}
			if len(tc.ports) != before {
				t.Errorf("Settle changed its Ports")
			}
		})
	}
}

// TestLoadDirPorts: a unit that loses a port is Contested (valid but for
// the rule), and the rule applies only to units that pass the others.
func TestLoadDirPorts(t *testing.T) {
	dir := testkit.UnitsDir(t, map[string]string{
		"a.yaml":     "command: [a]\nports: [80]\n",
		"b.yaml":     "command: [a]\nports: [80, 81]\n",
		"c.yaml":     "command: [a]\nports: [81]\n",
		"cyc-1.yaml": "command: [a]\nports: [90]\nafter: [cyc-2]\n",
		"cyc-2.yaml": "command: [a]\nafter: [cyc-1]\n",
		"d.yaml":     "command: [a]\nports: [90]\n",
	})
	d := loadDir(t, dir)
	if got, want := sortedKeys(d.Units), []string{"a", "c", "d"}; !reflect.DeepEqual(got, want) {
		t.Errorf("loaded %v, want %v (failed %v)", got, want, d.Failed)
	}
	if got, want := sortedKeys(d.Contested), []string{"b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("contested %v, want %v", got, want)
	}
	if got, want := sortedKeys(d.Ports), []string{"a", "b", "c", "d"}; !reflect.DeepEqual(got, want) {
		t.Errorf("port rule applied to %v, want %v", got, want)
	}
	if c := d.Ports["b"]; len(c) != 2 || c[1] != (Claim{Port: 81, File: filepath.Join(dir, "b.yaml"), Line: 2, Column: 13}) {
		t.Errorf("claims of b %v, want 80 then 81 at %s:2:13", c, filepath.Join(dir, "b.yaml"))
	}
}

// TestLoadDirWith: files laid over a directory replace its units of their
// names and meet the cross-unit rules with the others; a clash on a port
// fails the file, whatever the names.
func TestLoadDirWith(t *testing.T) {
	dir := testkit.UnitsDir(t, map[string]string{
		"web.yaml": "command: [a]\nports: [8080]\n",
		"db.yaml":  "command: [a]\nports: [5432]\n",
		"app.yaml": "command: [a]\nafter: [db]\n",
	})
	work := testkit.UnitsDir(t, map[string]string{
		"api.yaml":   "command: [a]\nports: [8080]\n",
		"db.yaml":    "command: [a]\nafter: [app]\n",
		"queue.yaml": "command: [a]\nrequires: [cache]\n",
		"log.yaml":   "command: [a]\nlog: {path: logs/log.log}\n",
	})
	in := func(n string) string { return filepath.Join(work, n) }
	d, err := (&Loader{}).LoadDirWith(dir, in("api.yaml"), in("db.yaml"), in("queue.yaml"), in("log.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sortedKeys(d.Units), []string{"log", "web"}; !reflect.DeepEqual(got, want) {
		t.Errorf("loaded %v, want %v (failed %v)", got, want, d.Failed)
	}
	want := map[string]string{
		"api":   in("api.yaml") + `:2:9: ports: 8080 is also declared by unit "web" at ` + filepath.Join(dir, "web.yaml") + `:2:9; two units cannot hold one port, and api fails: web is in ` + dir + ` already; give one of them another port`,
		"db":    in("db.yaml") + ":2:9: dependency cycle: app -> db -> app",
		"app":   filepath.Join(dir, "app.yaml") + ":2:9: dependency cycle: app -> db -> app",
		"queue": in("queue.yaml") + `:2:12: requires: no unit "cache" in ` + dir,
	}
	for n, w := range want {
		if es := d.Failed[n]; len(es) != 1 || !strings.HasPrefix(es[0].Error(), w) {
			t.Errorf("%s: errors %v, want one starting %q", n, es, w)
		}
	}
	if got, want := d.Units["log"].Log.Path, filepath.Join(dir, "logs", "log.log"); got != want {
		t.Errorf("log.path %s, want %s: a file laid over dir resolves against dir", got, want)
	}
}
