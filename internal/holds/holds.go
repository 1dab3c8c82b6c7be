// Package holds keeps, in hermesd's state directory, the units that stay
// stopped whatever their unit files say: the disabled ones (`hermesctl
// disable`, until `hermesctl enable`, across reboots) and the runtime stops
// (`hermesctl stop`, until `hermesctl start`, within one boot). hermesd reads
// the file once at its start, before it starts any unit (Store.Load), and
// the reconciler rewrites it at each change (Store.Save), on its Run
// goroutine.
//
// The file records a user's choice; it is not an instruction from whoever
// can write the state directory. It is read without following a symbolic
// link, only when it is a regular file of hermesd's own uid with one name
// and no write permission for others, at most MaxSize bytes, and parsed
// strictly: a known version, no unknown field, only valid unit names, no
// name twice, every stop with its boot id. A file that fails any of this is
// moved aside as holds.json.corrupt-<time>, its content intact, and Load
// returns no holds with an error that says where it went: the units start
// as if none had been stopped or disabled, and the log says so.
//
// A runtime stop carries the boot id of the boot that made it
// (/proc/sys/kernel/random/boot_id, as the ledger's identities do): Load
// drops the stops of other boots, which is how a reboot forgets them.
package holds

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hermes-units/hermes/internal/safefile"
	"github.com/hermes-units/hermes/units"
)

// FileName is the file's name in the state directory.
const FileName = "holds.json"

// Version is the format version this package reads and writes; a file of
// any other version is not trusted.
const Version = 1

// MaxSize bounds the file: thousands of unit names fit in it, and a larger
// file is not one hermesd wrote.
const MaxSize = 1 << 20

// ErrCorrupt reports a file that was not trusted: unparseable, of another
// version, holding an invalid name, too large, or not a regular file of
// ours. Load wraps it, having moved the file aside.
var ErrCorrupt = errors.New("holds file not trusted")

// Holds are the units kept stopped. Each list is sorted and holds a name
// once; a name in Disabled or Masked is not in Stopped (they say more). A
// name may be both disabled and masked: unmask and enable are two undos.
type Holds struct {
	Disabled []string // disabled with `hermesctl disable`: kept stopped across reboots
	// Masked with `hermesctl mask`: nothing starts them (start, enable, a
	// unit requiring them, a schedule) until unmask, across reboots.
	Masked  []string
	Stopped []string // stopped with `hermesctl stop` in this boot
	// Forgotten (Load only) are the runtime stops of other boots that the
	// file still held: dropped, and not written back.
	Forgotten []string
}

// file is the on-disk format:
//
//	{"version":1,"disabled":["api"],"stopped":[{"unit":"web","boot_id":"…"}],"masked":["db"]}
//
// masked is written only when some unit is masked, so that a build older
// than mask, which refuses an unknown field, reads the file of a daemon
// that never masked a unit.
type file struct {
	Version  int      `json:"version"`
	Disabled []string `json:"disabled"`
	Stopped  []stop   `json:"stopped"`
	Masked   []string `json:"masked,omitempty"`
}

type stop struct {
	Unit   string `json:"unit"`
	BootID string `json:"boot_id"`
}

// Store is the holds file of one state directory, for one boot. It is not
// safe for concurrent use: hermesd calls it from one goroutine, and holds
// the state directory's lock (only one hermesd writes the file).
type Store struct {
	dir, path, boot string
	now             func() time.Time // the time in the name of a file set aside
}

// Open returns the Store of the state directory dir for the boot whose id
// is boot (proc.BootID). It touches nothing on disk.
func Open(dir, boot string) *Store {
	return &Store{dir: dir, path: filepath.Join(dir, FileName), boot: boot, now: time.Now}
}

// Path is the file's path.
func (s *Store) Path() string { return s.path }

const tempPrefix = FileName + ".tmp-"

// Load reads the file. No file is no holds. A file that is not trusted
// (ErrCorrupt) is moved aside, and Load returns no holds and an error that
// wraps ErrCorrupt and names where the file went. A file that cannot be
// read (an I/O error) is left in place: Load returns no holds and the
// error. Temporary files a crashed write left behind are removed.
func (s *Store) Load() (Holds, error) {
	s.removeTemps()
	b, err := s.read()
	if errors.Is(err, fs.ErrNotExist) {
		return Holds{}, nil
	}
	if err == nil {
		var h Holds
		if h, err = Parse(b, s.boot); err == nil {
			return h, nil
		}
	}
	if !errors.Is(err, ErrCorrupt) {
		return Holds{}, fmt.Errorf("holds: read %s: %w; units it holds stopped or disabled start as if it were empty", s.path, err)
	}
	aside := fmt.Sprintf("%s.corrupt-%s", s.path, s.now().UTC().Format("20060102T150405.000000000Z"))
	if rerr := os.Rename(s.path, aside); rerr != nil {
		return Holds{}, fmt.Errorf("holds: %s: %w, and could not be moved aside (%v); units it holds stopped or disabled start; remove it", s.path, err, rerr)
	}
	return Holds{}, fmt.Errorf("holds: %s: %w; moved to %s: the units it held stopped or disabled start; disable or stop them again", s.path, err, aside)
}

// read returns the file's content, or an error wrapping ErrCorrupt when the
// file is not one to read at all.
func (s *Store) read() ([]byte, error) {
	f, err := safefile.OpenFile(s.path, os.O_RDONLY, 0)
	if err != nil {
		if errors.Is(err, safefile.ErrSymlink) || errors.Is(err, safefile.ErrNotRegular) {
			return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return nil, err
	}
	defer f.Close()
	if err := safefile.CheckOwn(f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if m := fi.Mode().Perm(); m&0o022 != 0 {
		return nil, fmt.Errorf("%w: mode %04o lets other users write it", ErrCorrupt, m)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxSize {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrCorrupt, MaxSize)
	}
	return b, nil
}

// Parse decodes a holds file for the boot boot: the stops of other boots go
// to Forgotten. It fails with an error wrapping ErrCorrupt on anything but
// one complete JSON object of this Version with valid, distinct unit names.
func Parse(b []byte, boot string) (Holds, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f file
	if err := dec.Decode(&f); err != nil {
		return Holds{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Holds{}, fmt.Errorf("%w: data after the JSON object", ErrCorrupt)
	}
	if f.Version != Version {
		return Holds{}, fmt.Errorf("%w: version %d, this build reads version %d", ErrCorrupt, f.Version, Version)
	}
	seen := map[string]bool{}
	name := func(what, n string) error {
		switch {
		case !units.ValidName(n):
			return fmt.Errorf("%w: %s unit name %q is not a unit name", ErrCorrupt, what, n)
		case seen[n]:
			return fmt.Errorf("%w: unit %s is listed twice", ErrCorrupt, n)
		}
		seen[n] = true
		return nil
	}
	var h Holds
	for _, n := range f.Disabled {
		if err := name("disabled", n); err != nil {
			return Holds{}, err
		}
		h.Disabled = append(h.Disabled, n)
	}
	masked := map[string]bool{}
	for _, n := range f.Masked {
		switch {
		case !units.ValidName(n):
			return Holds{}, fmt.Errorf("%w: masked unit name %q is not a unit name", ErrCorrupt, n)
		case masked[n]:
			return Holds{}, fmt.Errorf("%w: unit %s is masked twice", ErrCorrupt, n)
		}
		masked[n] = true
		h.Masked = append(h.Masked, n)
	}
	for _, st := range f.Stopped {
		if masked[st.Unit] {
			return Holds{}, fmt.Errorf("%w: unit %s is both masked and stopped", ErrCorrupt, st.Unit)
		}
		if err := name("stopped", st.Unit); err != nil {
			return Holds{}, err
		}
		switch {
		case st.BootID == "":
			return Holds{}, fmt.Errorf("%w: stopped unit %s has no boot id", ErrCorrupt, st.Unit)
		case st.BootID == boot:
			h.Stopped = append(h.Stopped, st.Unit)
		default:
			h.Forgotten = append(h.Forgotten, st.Unit)
		}
	}
	for _, l := range [][]string{h.Disabled, h.Masked, h.Stopped, h.Forgotten} {
		slices.Sort(l)
	}
	return h, nil
}

// Encode is the file's content for h, its stops of the boot boot.
// Forgotten is not written; a name both disabled (or masked) and stopped is
// written as disabled (masked) only. masked is left out when none is.
func Encode(h Holds, boot string) []byte {
	f := file{Version: Version, Disabled: []string{}, Stopped: []stop{}}
	f.Disabled = append(f.Disabled, h.Disabled...)
	slices.Sort(f.Disabled)
	f.Disabled = slices.Compact(f.Disabled)
	f.Masked = slices.Compact(slices.Sorted(slices.Values(h.Masked)))
	stopped := slices.Sorted(slices.Values(h.Stopped))
	for _, n := range slices.Compact(stopped) {
		_, dis := slices.BinarySearch(f.Disabled, n)
		_, masked := slices.BinarySearch(f.Masked, n)
		if !dis && !masked {
			f.Stopped = append(f.Stopped, stop{Unit: n, BootID: boot})
		}
	}
	b, _ := json.Marshal(f) // strings and ints only: cannot fail
	return append(b, '\n')
}

// Save replaces the file with h: a temporary file (created 0600 with
// O_EXCL, so no link is followed) in the state directory, fsynced, renamed
// over the file, and the directory fsynced, so that a disable outlives a
// power cut. A reader sees the old file or the new one, never a mix. On
// failure the file is as it was.
func (s *Store) Save(h Holds) error {
	if err := safefile.Replace(s.path, tempPrefix+"*", Encode(h, s.boot), 0o600); err != nil {
		return fmt.Errorf("holds: write %s: %w", s.path, err)
	}
	if d, err := os.Open(s.dir); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return fmt.Errorf("holds: %s written, but fsync of %s failed: %w", s.path, s.dir, err)
		}
	}
	return nil
}

// removeTemps deletes the temporary files of writes that a crash ended
// between create and rename. Only one hermesd writes here (it holds the
// state lock), and it is not writing while it loads: every one is stale.
func (s *Store) removeTemps() {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), tempPrefix) && e.Type().IsRegular() {
			os.Remove(filepath.Join(s.dir, e.Name()))
		}
	}
}
