package ledger

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadLedgerKeptAside: a ledger truncated mid-write and a ledger that is
// a directory are both moved aside as ledger.json.corrupt-<time>, with
// their content intact, and the ledger works again at once.
func TestBadLedgerKeptAside(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
		check func(t *testing.T, aside string)
	}{
		{
			name: "truncated mid-write",
			setup: func(t *testing.T, path string) {
				if err := os.WriteFile(path, []byte(`{"version": 1, "entries": [`+"\n"+`{"unit":"web","leader":{"pid":12`), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, aside string) {
				b, err := os.ReadFile(aside)
				if err != nil || !strings.HasSuffix(string(b), `"leader":{"pid":12`) {
					t.Errorf("aside file %s holds %q (%v), want the truncated ledger", aside, b, err)
				}
			},
		},
		{
			name: "a directory",
			setup: func(t *testing.T, path string) {
				if err := os.MkdirAll(filepath.Join(path, "inside"), 0o700); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, aside string) {
				if _, err := os.Stat(filepath.Join(aside, "inside")); err != nil {
					t.Errorf("the directory was not kept aside with its content: %v", err)
				}
			},
		},
	}
	for _, tt := range tests {
		for _, first := range []string{"Entries", "Add"} {
			t.Run(tt.name+"/"+first, func(t *testing.T) {
				dir := t.TempDir()
				l := openDir(t, dir)
				tt.setup(t, l.Path())
				var err error
				if first == "Entries" {
					_, err = l.Entries(t.Context())
				} else {
					err = l.Add(t.Context())
				}
				if err != nil {
					t.Fatalf("%s on a bad ledger: %v, want it repaired", first, err)
				}
				asides, _ := filepath.Glob(l.Path() + ".corrupt-*")
				if len(asides) != 1 {
					t.Fatalf("kept aside: %v, want one ledger.json.corrupt-* file", asides)
				}
				tt.check(t, asides[0])
				if _, err := Parse(mustRead(t, l.Path())); err != nil {
					t.Errorf("the rebuilt ledger does not parse: %v", err)
				}
			})
		}
	}
}

// TestBadLockKeptAside: a ledger.lock replaced by a directory is moved aside
// as ledger.lock.corrupt-<time> with its content, as a bad ledger.json is,
// and writes work again at once (they used to fail with "open lock file:
// is a directory", every spawn with them).
func TestBadLockKeptAside(t *testing.T) {
	dir := t.TempDir()
	l := openDir(t, dir)
	lock := filepath.Join(dir, LockName)
	if err := os.MkdirAll(filepath.Join(lock, "inside"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := l.Add(t.Context(), Entry{Unit: "web"}); err != nil {
		t.Fatalf("Add with ledger.lock a directory: %v, want it repaired", err)
	}
	asides, _ := filepath.Glob(lock + ".corrupt-*")
	if len(asides) != 1 {
		t.Fatalf("kept aside: %v, want one ledger.lock.corrupt-* directory", asides)
	}
	if _, err := os.Stat(filepath.Join(asides[0], "inside")); err != nil {
		t.Errorf("the directory was not kept aside with its content: %v", err)
	}
	if fi, err := os.Stat(lock); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("ledger.lock after the repair: %v (%v), want a regular file", fi, err)
	}
	if err := l.Add(t.Context(), Entry{Unit: "db"}); err != nil {
		t.Errorf("a second Add: %v", err)
	}
}
