package ledger

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-units/hermes/units"
)

// TestFileBeforeTypes: testdata/ledger-before-types.json was written by
// the build before Role, Ownership and State were typed, with every value
// they take (an unset role, run's, both survivors, both states). It reads
// back to those typed values, by both parsers, and is written again byte
// for byte: the file format did not change.
func TestFileBeforeTypes(t *testing.T) {
	old, err := os.ReadFile(filepath.Join("testdata", "ledger-before-types.json"))
	if err != nil {
		t.Fatal(err)
	}
	boot, _, ok := cutHead(old)
	if !ok {
		t.Fatal("testdata/ledger-before-types.json is not in the canonical layout")
	}
	want := []struct {
		unit      string
		role      units.Role
		ownership units.Ownership
		state     State
	}{
		{"web", units.RoleGateway, units.Owned, Live},
		{"indexer", units.RoleGateway, units.Adoptable, Live},
		{"tunnel", units.RoleWorker, units.PersistOnRelease, Released},
		{"cache", units.RoleGateway, units.Adoptable, Adopted},
		{"adopted-4300", units.RoleGateway, units.Owned, Adopted},
		{"make", units.RoleRun, units.Owned, Live},
		{"lib", "", units.Owned, Live},
	}
	for _, tc := range parsers {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.parse(old)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("got %d entries, want %d", len(got), len(want))
			}
			for i, w := range want {
				e := got[i]
				if e.Unit != w.unit || e.Role != w.role || e.Ownership != w.ownership || e.State != w.state {
					t.Errorf("entry %d: got %s role %q ownership %q state %q, want %s role %q ownership %q state %q",
						i, e.Unit, e.Role, e.Ownership, e.State, w.unit, w.role, w.ownership, w.state)
				}
			}
			b, err := marshalReusing(nil, boot, got, snapshot{}, false)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, old) {
				t.Errorf("written again, the file differs:\ngot  %s\nwant %s", b, old)
			}
		})
	}
}

// TestFileUnknownWords: a role, ownership or state this build does not
// know makes the file corrupt, as any other malformed field does; Marshal
// refuses to write one.
func TestFileUnknownWords(t *testing.T) {
	old, err := os.ReadFile(filepath.Join("testdata", "ledger-before-types.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, from, to string }{
		{"role", `"role":"worker"`, `"role":"boss"`},
		{"ownership", `"ownership":"adoptable"`, `"ownership":"survivor"`},
		{"state", `"state":"released"`, `"state":"gone"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := []byte(strings.Replace(string(old), tc.from, tc.to, 1))
			if bytes.Equal(b, old) {
				t.Fatalf("%s is not in the file", tc.from)
			}
			for _, p := range parsers {
				if _, err := p.parse(b); err == nil {
					t.Errorf("%s accepted %s", p.name, tc.to)
				}
			}
		})
	}
	for _, e := range []Entry{{Unit: "r", Role: "boss"}, {Unit: "o", Ownership: "survivor"}, {Unit: "s", State: "gone"}} {
		if b, err := Marshal([]Entry{e}); err == nil {
			t.Errorf("Marshal(%+v) wrote %s, want an error", e, b)
		}
	}
}

func TestStateRoundTrip(t *testing.T) {
	for _, s := range []State{Live, Released, Adopted} {
		got, err := ParseState(string(s))
		if err != nil || got != s {
			t.Errorf("ParseState(%q) = %q, %v; want %q", s, got, err, s)
		}
		var back State
		if err := back.UnmarshalText([]byte(s)); err != nil || back != s {
			t.Errorf("UnmarshalText(%q) = %q, %v; want %q", s, back, err, s)
		}
	}
	for _, bad := range []string{"live", "Released", "owned"} {
		if got, err := ParseState(bad); err == nil {
			t.Errorf("ParseState(%q) = %q, want an error", bad, got)
		}
	}
	// A corrupt file's state is quoted in the error only in part, as every
	// other word of the vocabulary is (word.Quote).
	long := strings.Repeat("x", 4096)
	_, err := ParseState(long)
	if err == nil || len(err.Error()) > 200 || !strings.Contains(err.Error(), "want released, adopted or none") {
		t.Errorf("ParseState(4096 bytes) = %v; want an error of at most 200 bytes naming the words", err)
	}
	var back State = Released
	if err := back.UnmarshalText([]byte("gone")); err == nil || back != Released {
		t.Errorf("UnmarshalText(gone) = %v and set %q; want an error and Released kept", err, back)
	}
}
