package ledger

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

// readFile reads the file at path into buf's storage (grown as needed).
func readFile(path string, buf []byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := 512
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		size = int(fi.Size()) + 512 // room to see EOF in one more read
	}
	b := slices.Grow(buf[:0], size)
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
		if len(b) == cap(b) {
			b = slices.Grow(b, cap(b))
		}
	}
}

// writeAtomic replaces path with b: temporary file in dir, fsync, rename.
// A reader sees the old file or the new one, never a mix.
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
	// The directory is not fsynced after the rename. That fsync would only
	// make the rename itself survive a power cut or kernel crash, and the
	// ledger records live processes: after a reboot every entry is dead (and
	// is pruned, being of another boot), so a rename lost that way loses
	// nothing that matters. A reader or writer after the rename sees the new
	// file in any case, and the file's own fsync above keeps a rename that
	// does survive from pointing at unwritten data. Skipping it takes a disk
	// round trip off every write, all of it with the lock held.
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return fmt.Errorf("ledger: rename %s to %s: %w", name, path, err)
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
