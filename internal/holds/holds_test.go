package holds

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
)

const (
	bootA = "8d1b7f0e-6a1c-4c3e-9d35-3f5a4f3d2a11"
	bootB = "0f4c1c2b-9e7a-4b1d-8f0e-6a2d5c3b4e22"
)

// TestRoundTrip: what Encode writes, Parse reads back the same, for the
// same boot; under another boot the stops are Forgotten.
func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Holds
	}{
		{"empty", Holds{}},
		{"disabled only", Holds{Disabled: []string{"api", "web"}}},
		{"stopped only", Holds{Stopped: []string{"db"}}},
		{"both", Holds{Disabled: []string{"a.b@c-1", "web"}, Stopped: []string{"db", "worker_2"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(Encode(tc.in, bootA), bootA)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Disabled, tc.in.Disabled) || !slices.Equal(got.Stopped, tc.in.Stopped) || got.Forgotten != nil {
				t.Errorf("got %+v, want %+v", got, tc.in)
			}
			other, err := Parse(Encode(tc.in, bootA), bootB)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(other.Disabled, tc.in.Disabled) || other.Stopped != nil || !slices.Equal(other.Forgotten, tc.in.Stopped) {
				t.Errorf("read in another boot: got %+v, want the disabled kept and the stops forgotten", other)
			}
		})
	}
}

// TestEncodeNormalizes: lists come out sorted, once each, and a unit both
// disabled and stopped is written disabled only.
func TestEncodeNormalizes(t *testing.T) {
	got, err := Parse(Encode(Holds{Disabled: []string{"web", "api", "web"}, Stopped: []string{"web", "db", "db"}, Forgotten: []string{"x"}}, bootA), bootA)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"api", "web"}; !slices.Equal(got.Disabled, want) {
		t.Errorf("disabled %q, want %q", got.Disabled, want)
	}
	if want := []string{"db"}; !slices.Equal(got.Stopped, want) {
		t.Errorf("stopped %q, want %q", got.Stopped, want)
	}
	if got.Forgotten != nil {
		t.Errorf("forgotten %q written back, want none", got.Forgotten)
	}
}

// TestParseRefuses: anything but a file this package writes is not trusted.
func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"empty", ``, "EOF"},
		{"truncated", `{"version":1,"disabled":["web"`, "unexpected EOF"},
		{"not an object", `["web"]`, "cannot unmarshal"},
		{"trailing data", `{"version":1} {"version":1}`, "data after the JSON object"},
		{"no version", `{"disabled":["web"]}`, "version 0"},
		{"another version", `{"version":2,"disabled":["web"]}`, "version 2"},
		{"unknown field", `{"version":1,"enabled":["web"]}`, `unknown field "enabled"`},
		{"path as a name", `{"version":1,"disabled":["../web"]}`, `"../web" is not a unit name`},
		{"empty name", `{"version":1,"stopped":[{"unit":"","boot_id":"x"}]}`, `"" is not a unit name`},
		{"control characters", `{"version":1,"disabled":["web\u001b[2J"]}`, "is not a unit name"},
		{"name twice", `{"version":1,"disabled":["web","web"]}`, "unit web is listed twice"},
		{"disabled and stopped", `{"version":1,"disabled":["web"],"stopped":[{"unit":"web","boot_id":"x"}]}`, "unit web is listed twice"},
		{"stop without boot id", `{"version":1,"stopped":[{"unit":"web"}]}`, "stopped unit web has no boot id"},
		{"name as a number", `{"version":1,"disabled":[7]}`, "cannot unmarshal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in), bootA)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Parse: got %v, want an error wrapping ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse: got %q, want it to say %q", err, tc.want)
			}
		})
	}
}

// TestSaveLoad: Save writes a 0600 file that Load reads back; no file is
// no holds; the stops of another boot are forgotten.
func TestSaveLoad(t *testing.T) {
	dir := t.TempDir()
	s := Open(dir, bootA)
	h, err := s.Load()
	if err != nil || h.Disabled != nil || h.Stopped != nil {
		t.Fatalf("Load with no file: got %+v, %v, want no holds and no error", h, err)
	}
	want := Holds{Disabled: []string{"web"}, Stopped: []string{"db"}}
	if err := s.Save(want); err != nil {
		t.Fatal(err)
	}
	testkit.Perms(t, map[string]os.FileMode{s.Path(): 0o600})
	h, err = s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.Disabled, want.Disabled) || !slices.Equal(h.Stopped, want.Stopped) {
		t.Errorf("Load: got %+v, want %+v", h, want)
	}
	h, err = Open(dir, bootB).Load()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.Disabled, want.Disabled) || h.Stopped != nil || !slices.Equal(h.Forgotten, []string{"db"}) {
		t.Errorf("Load after a reboot: got %+v, want web disabled, db forgotten", h)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("state directory holds %d files after the saves, want only %s", len(ents), FileName)
	}
}

// TestLoadSetsAside: a file that is not trusted is moved aside with its
// content intact, Load says where, and gives no holds; the next Save
// writes a fresh file. A link's target is never read nor changed.
func TestLoadSetsAside(t *testing.T) {
	valid := string(Encode(Holds{Disabled: []string{"web"}}, bootA))
	// linked plants a valid file named name beside path, and at path a
	// link to it made by link (os.Symlink or os.Link).
	linked := func(name string, link func(oldname, newname string) error) func(*testing.T, string) {
		return func(t *testing.T, path string) {
			other := filepath.Join(filepath.Dir(path), name)
			write(t, other, valid, 0o600)
			if err := link(other, path); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, path string)
		want  string
	}{
		{"garbage", func(t *testing.T, path string) { write(t, path, "\x00\x01 not json", 0o600) }, "holds file not trusted"},
		{"truncated", func(t *testing.T, path string) { write(t, path, valid[:len(valid)/2], 0o600) }, "unexpected EOF"},
		{"too large", func(t *testing.T, path string) {
			write(t, path, `{"version":1,"disabled":[]}`+strings.Repeat(" ", MaxSize), 0o600)
		}, "larger than"},
		{"writable by others", func(t *testing.T, path string) { write(t, path, valid, 0o622) }, "lets other users write it"},
		{"a symbolic link", linked("elsewhere.json", os.Symlink), "is a symbolic link"},
		{"a directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, "is not a regular file"},
		{"a FIFO", func(t *testing.T, path string) {
			if err := mkfifo(path); err != nil {
				t.Skip("mkfifo:", err)
			}
		}, "is not a regular file"},
		{"hard-linked", linked("other-name", os.Link), "hard links"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := Open(dir, bootA)
			s.now = func() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) }
			tc.plant(t, s.Path())
			before, _ := os.Lstat(s.Path())
			h, err := s.Load()
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Load: got %v, want an error wrapping ErrCorrupt", err)
			}
			aside := s.Path() + ".corrupt-20261201T090000.000000000Z"
			for _, w := range []string{tc.want, "moved to " + aside} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Load: got %q, want it to say %q", err, w)
				}
			}
			if h.Disabled != nil || h.Stopped != nil {
				t.Errorf("Load: got %+v from a file not trusted, want no holds", h)
			}
			after, err := os.Lstat(aside)
			if err != nil {
				t.Fatalf("nothing set aside: %v", err)
			}
			if !os.SameFile(before, after) {
				t.Errorf("%s is not the file that was planted", aside)
			}
			if target := filepath.Join(dir, "elsewhere.json"); tc.name == "a symbolic link" {
				if b, _ := os.ReadFile(target); string(b) != valid {
					t.Errorf("the link's target changed: %q", b)
				}
			}
			if err := s.Save(Holds{Stopped: []string{"db"}}); err != nil {
				t.Fatal(err)
			}
			if h, err := s.Load(); err != nil || !slices.Equal(h.Stopped, []string{"db"}) {
				t.Errorf("Load after a fresh Save: got %+v, %v, want db stopped", h, err)
			}
		})
	}
}

// TestSaveReplacesLink: Save never writes through a link planted at the
// file's name: the link is replaced, its target untouched.
func TestSaveReplacesLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "victim")
	write(t, target, "keep", 0o600)
	s := Open(dir, bootA)
	if err := os.Symlink(target, s.Path()); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(Holds{Disabled: []string{"web"}}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the link's target was written: %q", b)
	}
	fi, err := os.Lstat(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() {
		t.Errorf("%s is %v after Save, want a regular file", s.Path(), fi.Mode())
	}
}

// TestLoadRemovesStaleTemps: the temporary file of a write a crash cut
// short is removed at Load; the file itself is unchanged.
func TestLoadRemovesStaleTemps(t *testing.T) {
	dir := t.TempDir()
	s := Open(dir, bootA)
	if err := s.Save(Holds{Disabled: []string{"web"}}); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, tempPrefix+"123")
	write(t, tmp, `{"version":1,"disabled":["half`, 0o600)
	h, err := s.Load()
	if err != nil || !slices.Equal(h.Disabled, []string{"web"}) {
		t.Fatalf("Load: got %+v, %v, want web disabled", h, err)
	}
	if _, err := os.Lstat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temporary file still there (%v)", err)
	}
}

// TestLoadUnreadable: a file Load cannot read (not a matter of trust) is
// reported and left in place.
func TestLoadUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads a 0000 file")
	}
	dir := t.TempDir()
	s := Open(dir, bootA)
	write(t, s.Path(), string(Encode(Holds{Disabled: []string{"web"}}, bootA)), 0o000)
	_, err := s.Load()
	if err == nil || errors.Is(err, ErrCorrupt) {
		t.Fatalf("Load: got %v, want a read error that is not ErrCorrupt", err)
	}
	if _, err := os.Lstat(s.Path()); err != nil {
		t.Errorf("file moved: %v", err)
	}
}

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }

func write(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

// FuzzParse: Parse never panics, refuses with ErrCorrupt only, and what it
// accepts encodes back to the same holds.
func FuzzParse(f *testing.F) {
	f.Add([]byte(Encode(Holds{Disabled: []string{"web"}, Stopped: []string{"db"}}, bootA)))
	f.Add([]byte(`{"version":1,"disabled":[],"stopped":[{"unit":"a","boot_id":"` + bootB + `"}]}`))
	f.Add([]byte(`{"version":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := Parse(b, bootA)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Parse: %v, not ErrCorrupt", err)
			}
			return
		}
		again, err := Parse(Encode(h, bootA), bootA)
		if err != nil {
			t.Fatalf("Parse of Encode: %v", err)
		}
		if !slices.Equal(again.Disabled, h.Disabled) || !slices.Equal(again.Stopped, h.Stopped) {
			t.Fatalf("round trip: got %+v, want %+v", again, h)
		}
	})
}

// TestMaskedRoundTrip: the masked units come back from the file, across
// boots (a mask outlives a reboot), a stop of a masked unit is not written,
// and a file with no masked unit has no masked field, so that a build older
// than mask (which refuses unknown fields) still reads it.
func TestMaskedRoundTrip(t *testing.T) {
	in := Holds{Disabled: []string{"api", "db"}, Masked: []string{"web", "db", "web"}, Stopped: []string{"web", "worker"}}
	b := Encode(in, bootA)
	for _, boot := range []string{bootA, bootB} {
		got, err := Parse(b, boot)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"db", "web"}; !slices.Equal(got.Masked, want) {
			t.Errorf("boot %s: masked %q, want %q (file %s)", boot, got.Masked, want, b)
		}
		if want := []string{"api", "db"}; !slices.Equal(got.Disabled, want) {
			t.Errorf("boot %s: disabled %q, want %q", boot, got.Disabled, want)
		}
		if slices.Contains(got.Stopped, "web") || slices.Contains(got.Forgotten, "web") {
			t.Errorf("boot %s: the masked unit web was written as stopped too: %s", boot, b)
		}
	}
	plain := Encode(Holds{Disabled: []string{"api"}, Stopped: []string{"web"}}, bootA)
	if strings.Contains(string(plain), "masked") {
		t.Errorf("a file with no masked unit names the field: %s", plain)
	}
	var old struct {
		Version  int      `json:"version"`
		Disabled []string `json:"disabled"`
		Stopped  []stop   `json:"stopped"`
	}
	dec := json.NewDecoder(bytes.NewReader(plain))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&old); err != nil {
		t.Errorf("the format before mask does not read a file with no masked unit: %v", err)
	}
	for _, bad := range []struct{ in, want string }{
		{`{"version":1,"disabled":[],"stopped":[],"masked":["web","web"]}`, "masked twice"},
		{`{"version":1,"disabled":[],"stopped":[],"masked":["../web"]}`, "not a unit name"},
		{`{"version":1,"disabled":[],"stopped":[{"unit":"web","boot_id":"x"}],"masked":["web"]}`, "both masked and stopped"},
	} {
		if _, err := Parse([]byte(bad.in), bootA); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Parse(%s) = %v, want ErrCorrupt saying %q", bad.in, err, bad.want)
		}
	}
}
