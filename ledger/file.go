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
	"time"
)

// Version is the file format version this package writes. It reads it
// and version 1 (where every identity carries its boot id); a file of any
// other version is treated as corrupt (moved aside, rebuilt).
const Version = 2

// ErrCorrupt reports a ledger file that cannot be parsed or carries an
// unknown version.
var ErrCorrupt = errors.New("corrupt ledger file")

// file is the on-disk format:
//
//	{"version":2,"boot_id":"…","entries":[…]}
//
// The boot id is said once for the file: an identity (leader, owner) that
// has no "boot_id" of its own is of the file's boot. Every entry's leader
// and owner usually are, and the two boot ids were a quarter of each line,
// all of it read, written and fsynced at every write.
type file struct {
	Version int               `json:"version"`
	BootID  string            `json:"boot_id"`
	Entries []json.RawMessage `json:"entries"`
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
	if f.Version != Version && f.Version != 1 {
		return nil, fmt.Errorf("%w: version %d, this build reads versions 1 and %d", ErrCorrupt, f.Version, Version)
	}
	if f.Entries == nil {
		return nil, nil
	}
	entries := make([]Entry, len(f.Entries))
	for i, raw := range f.Entries {
		if err := decodeEntry(raw, f.BootID, &entries[i]); err != nil {
			return nil, fmt.Errorf("%w: entry %d: %v", ErrCorrupt, i, err)
		}
	}
	return entries, nil
}

// decodeEntry decodes one entry into the zero Entry e; an identity without
// a boot id of its own gets boot, the file's.
func decodeEntry(b []byte, boot string, e *Entry) error {
	e.Leader.BootID, e.Owner.BootID = boot, boot
	return json.Unmarshal(b, e)
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

// createTemp creates the temporary file of a write. Update creates it
// before it waits for the lock: creating a file is a directory update, and
// it need not be made while the others wait.
func createTemp(dir string) (*os.File, error) {
	tmp, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("ledger: create temporary file in %s: %w", dir, err)
	}
	return tmp, nil
}

// writeTemp writes b to tmp, fsyncs it and renames it to path; on failure
// it removes tmp. Either way tmp is closed.
func writeTemp(tmp *os.File, path string, b []byte) error {
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

// dropTemp closes and removes a temporary file that will not be written.
func dropTemp(tmp *os.File) {
	tmp.Close()
	os.Remove(tmp.Name())
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

// staleTemp is the age past which a temporary file is a crashed writer's:
// a live writer's exists from before its lock wait (at most LockTimeout)
// until its rename.
const staleTemp = time.Minute

// removeStaleTemps deletes the temporary files a crashed writer left
// behind, those older than staleTemp. Younger ones may be other writers',
// created while they wait for the lock.
func removeStaleTemps(dir string, now time.Time) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		if fi, err := e.Info(); err == nil && now.Sub(fi.ModTime()) > staleTemp {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
