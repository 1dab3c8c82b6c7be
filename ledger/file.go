package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Version is the file format version this package reads and writes. A file
// with another version is treated as corrupt (moved aside, rebuilt).
const Version = 1

// ErrCorrupt reports a ledger file that cannot be parsed or carries an
// unknown version.
var ErrCorrupt = errors.New("corrupt ledger file")

// file is the on-disk format: {"version": 1, "entries": [...]}.
type file struct {
	Version int     `json:"version"`
	Entries []Entry `json:"entries"`
}

const tempPrefix = FileName + ".tmp-"

// Parse decodes a ledger file. It fails with an error wrapping ErrCorrupt on
// anything but a complete JSON object of a known version.
func Parse(b []byte) ([]Entry, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	var f file
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the JSON object", ErrCorrupt)
	}
	if f.Version != Version {
		return nil, fmt.Errorf("%w: version %d, this build reads version %d", ErrCorrupt, f.Version, Version)
	}
	return f.Entries, nil
}

// writeAtomic replaces path with b: temporary file in dir, fsync,
// rename, fsync of dir. A reader sees the old file or the new one, never a
// mix.
func writeAtomic(dir, path string, b []byte) error {
	tmp, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return fmt.Errorf("ledger: create temporary file in %s: %w", dir, err)
	}
	name := tmp.Name()
	fail := func(step string, err error) error {
		tmp.Close()
		os.Remove(name)
		return stepError(step, name, err)
	}
	if _, err := tmp.Write(b); err != nil {
		return fail("write", err)
	}
	if err := tmp.Sync(); err != nil {
		return fail("fsync", err)
	}
	if err := tmp.Close(); err != nil {
		return fail("close", err)
	}
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return fmt.Errorf("ledger: rename %s to %s: %w", name, path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("ledger: open %s for fsync: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("ledger: fsync %s: %w", dir, err)
	}
	return nil
}

// stepError is the error of step (write, fsync, close) on the temporary
// file name. The *os.File methods already name the file in a *PathError
// ("write NAME: no space left on device"): that one is only prefixed, so
// the path appears once.
func stepError(step, name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == name {
		return fmt.Errorf("ledger: %w", err)
	}
	return fmt.Errorf("ledger: %s %s: %w", step, name, err)
}

// removeStaleTemps deletes temporary files a crashed writer left behind. The
// caller holds the lock, so no temporary file is in use.
func removeStaleTemps(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
