package ledger

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/hermes-units/hermes/proc"
)

// TestBootIDOnce: the file says this boot's id once; identities of this
// boot carry none of their own, those of another boot (or none) keep
// theirs, and all of them read back as written.
func TestBootIDOnce(t *testing.T) {
	boot, err := proc.BootID()
	if err != nil {
		t.Skipf("no boot id on this machine (%v): the file's boot id cannot be exercised", err)
	}
	here := selfEntry(t, "here")
	other := selfEntry(t, "other")
	other.Owner.BootID = "another-boot"
	blank := selfEntry(t, "blank")
	blank.Owner.BootID = ""
	b, err := Marshal([]Entry{here, other, blank})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(b), boot); got != 1 {
		t.Errorf("this boot's id appears %d times, want once (in the head):\n%s", got, b)
	}
	if !strings.Contains(string(b), `"boot_id":"another-boot"`) || !strings.Contains(string(b), `"boot_id":""`) {
		t.Errorf("an identity of another boot (or of none) lost its boot id:\n%s", b)
	}
	for _, tc := range parsers {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.parse(b)
			if err != nil {
				t.Fatal(err)
			}
			if want := []Entry{here, other, blank}; !reflect.DeepEqual(normalize(got), normalize(want)) {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}

// TestVersion1: a file of version 1 (a boot id in every identity) is read
// as it is, not moved aside, and the next write turns it into the current
// version with every entry kept.
func TestVersion1(t *testing.T) {
	l := openTemp(t)
	e := selfEntry(t, "old")
	v1 := `{"version":1,"entries":[` + "\n" + `{"unit":"old","leader":{"pid":` + itoa(e.Leader.PID) + `,"start_time":` + utoa(e.Leader.StartTime) + `,"boot_id":"` + e.Leader.BootID + `"},"pgid":` + itoa(e.PGID) + `,"argv":["sleep","1"],"owner":{"pid":` + itoa(e.Owner.PID) + `,"start_time":` + utoa(e.Owner.StartTime) + `,"boot_id":"` + e.Owner.BootID + `"},"role":"gateway","ownership":"owned","spawned":"` + e.Spawned.Format("2006-01-02T15:04:05Z07:00") + `"}` + "\n]}\n"
	if err := os.WriteFile(l.Path(), []byte(v1), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := l.Entries(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if want := []Entry{e}; !reflect.DeepEqual(normalize(got), normalize(want)) {
		t.Fatalf("version 1 read as %+v, want %+v", got, want)
	}
	if err := l.Add(t.Context(), selfEntry(t, "new")); err != nil {
		t.Fatal(err)
	}
	b := mustRead(t, l.Path())
	if !strings.HasPrefix(string(b), `{"version":2,`) {
		t.Errorf("after a write the file starts %.30q, want version 2", b)
	}
	got, _ = l.Entries(t.Context())
	if want := []string{"old", "new"}; !reflect.DeepEqual(unitNames(got), want) {
		t.Errorf("after a write got %v, want %v", unitNames(got), want)
	}
	if aside, _ := filepath.Glob(l.Path() + ".corrupt-*"); len(aside) != 0 {
		t.Errorf("a version 1 file was moved aside: %v", aside)
	}
}

func itoa(n int) string    { return strconv.Itoa(n) }
func utoa(n uint64) string { return strconv.FormatUint(n, 10) }

// Marshal encodes entries, for the tests, in the file format (canonical layout). It fails
// only on a spawn time RFC 3339 cannot hold (a year outside 0–9999), as
// encoding/json would, and on a role, ownership or state that Parse would
// refuse.
func Marshal(entries []Entry) ([]byte, error) {
	return marshalReusing(nil, fileBoot(), entries, snapshot{}, false)
}
