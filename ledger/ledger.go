// Package ledger keeps the spawn ledger: the on-disk record of every live
// spawn (who started what, when, with which identity), shared by every owner
// that uses the same state directory.
//
// The ledger is the file ledger.json in the state directory. Writers go
// through Update, a read-modify-write under a cross-process lock (flock on
// the separate file ledger.lock, held only for the read-modify-write,
// taken in the order writers queued in ledger.queue: see queue.go) that
// waits at most LockTimeout, so a stuck writer cannot freeze the others: they
// fail with an error wrapping ErrLocked instead. Every write is atomic (a
// temporary file in the same directory, fsync, rename), so a reader never
// sees a half-written file and needs no lock.
//
// A write prunes the entries whose process group is gone (see
// Entry.Alive): every write of a Ledger while the file holds at most
// pruneEvery entries, and past that one write in len/pruneEvery, so that
// a write reads /proc for about pruneEvery entries instead of for every
// one (a start of n units made n writes of n reads each). A file that cannot be parsed, or that carries an unknown
// version, is never silently dropped: it is moved aside as
// ledger.json.corrupt-<timestamp> and the ledger is rebuilt from the live
// processes that carry the environment tags (see EnvUnit) and lead their
// process group.
package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/units"
)

// ErrLocked reports that the ledger lock was not acquired within
// LockTimeout: another writer holds it (or is stuck holding it).
var ErrLocked = errors.New("ledger is locked by another writer")

// LockTimeout bounds how long a writer waits for the ledger lock.
const LockTimeout = 2 * time.Second

// File names inside the state directory.
const (
	FileName = "ledger.json"
	LockName = "ledger.lock"
)

// Entry records one spawn: a process group (and cgroup, where there is one)
// that an owner started.
type Entry struct {
	Unit      string          `json:"unit"`
	Leader    proc.Identity   `json:"leader"`
	PGID      int             `json:"pgid"`
	Cgroup    string          `json:"cgroup,omitempty"` // absolute cgroup dir, "" in pgroup mode
	Argv      []string        `json:"argv"`             // first tokens, secrets redacted (see Redact)
	Owner     proc.Identity   `json:"owner"`
	Role      units.Role      `json:"role"`      // owner's role: gateway | worker | run | "" (not given one)
	Ownership units.Ownership `json:"ownership"` // owned | adoptable | persist_on_release
	Reason    string          `json:"reason,omitempty"`
	Log       string          `json:"log,omitempty"`
	Spawned   time.Time       `json:"spawned"`
	State     State           `json:"state,omitempty"`
	Spawn     string          `json:"spawn,omitempty"` // spawn key, the value of EnvSpawn in the child's environment
}

// Ledger is one state directory's ledger. It holds no open file between
// calls; it is safe for concurrent use by goroutines and by processes (each
// Update takes the file lock on its own open file description).
type Ledger struct {
	dir   string
	path  string
	lock  string
	queue string

	// turn is held (a value sent) by the one Update of this Ledger that is
	// taking or holding the file lock: goroutines of one process queue here,
	// not in flock, and it guards the buffers below.
	turn chan struct{}
	rbuf []byte // guarded by turn; the file as last read
	wbuf []byte // guarded by turn; the file as last encoded
	// given and argv are the memory of the copy of the entries an Update
	// hands to its fn, reused by the next Update (fn keeps nothing of
	// it): a copy of thousands of entries at each write was most of what
	// an owner of thousands of units allocated, and so most of its
	// garbage collections. Guarded by turn.
	given []Entry
	argv  []string
	// swept is when this Ledger last removed stale temporary files. Guarded
	// by turn.
	swept time.Time
	// unpruned counts the writes since this Ledger last pruned. Guarded by
	// turn.
	unpruned int

	mu        sync.Mutex
	lastWait  time.Duration       // guarded by mu
	last      snapshot            // guarded by mu; the last file parsed
	abandoned int                 // guarded by mu; lock waiters given up but still blocked in flock
	onWrite   func(time.Duration) // guarded by mu; see ObserveWrites
}

// Open returns the ledger of stateDir, creating the directory (0700) if it is
// missing. It does not read the file: errors in it surface at the first
// Update or Entries.
func Open(stateDir string) (*Ledger, error) {
	if stateDir == "" {
		return nil, errors.New("ledger: empty state directory: pass the --state directory")
	}
	dir, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, fmt.Errorf("ledger: state directory %q: %w", stateDir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("ledger: create state directory: %w", err)
	}
	return &Ledger{dir: dir, path: filepath.Join(dir, FileName), lock: filepath.Join(dir, LockName), queue: filepath.Join(dir, QueueName), turn: make(chan struct{}, 1)}, nil
}

// Path is the ledger file's path.
func (l *Ledger) Path() string { return l.path }

// Dir is the state directory, absolute and with symlinks resolved: the
// value of EnvState in the environment of the spawns this ledger records.
func (l *Ledger) Dir() string {
	if d, err := filepath.EvalSymlinks(l.dir); err == nil {
		return d
	}
	return l.dir
}

// LastLockWait is how long the most recent Update of this Ledger waited for
// the lock (for measurements).
func (l *Ledger) LastLockWait() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastWait
}

// Update is the read-modify-write: under the file lock it reads the file
// (moving a corrupt one aside and rebuilding it from the live tagged
// processes), passes its entries to fn, and writes what fn returns, less
// the entries no longer alive (see the package doc for when a write
// looks), atomically. fn may be given entries whose group is gone since
// the last write. fn runs with the lock held: it
// must be quick and must not call back into the ledger. It may change
// what it is given, but must not keep it once it returns (the slice, or
// an entry's Argv): the next Update reuses that memory; copy what is to
// be kept. An error from fn leaves the file untouched and is returned as
// is.
//
// It fails with an error wrapping ErrLocked when the lock is not acquired
// within LockTimeout, and with ctx's error when ctx ends first.
func (l *Ledger) Update(ctx context.Context, fn func([]Entry) ([]Entry, error)) error {
	start := time.Now()
	defer l.observeWrite(start)
	timer := time.NewTimer(LockTimeout)
	defer timer.Stop()
	select {
	case l.turn <- struct{}{}:
	case <-timer.C:
		l.setWait(start)
		return fmt.Errorf("ledger %s: %w", l.path, l.lockedError(LockTimeout))
	case <-ctx.Done():
		l.setWait(start)
		return fmt.Errorf("ledger %s: %w", l.path, ctx.Err())
	}
	defer func() { <-l.turn }()
	tmp, err := createTemp(l.dir)
	if err != nil {
		l.setWait(start)
		return err
	}
	unlock, err := l.acquire(ctx, LockTimeout-time.Since(start))
	l.setWait(start)
	if err != nil {
		dropTemp(tmp)
		return fmt.Errorf("ledger %s: %w", l.path, err)
	}
	defer unlock()
	return l.updateLocked(tmp, fn)
}

func (l *Ledger) setWait(start time.Time) {
	l.mu.Lock()
	l.lastWait = time.Since(start)
	l.mu.Unlock()
}

// updateLocked runs the read-modify-write, writing through tmp (which it
// closes, and removes unless it became the file); the caller holds turn
// and the file lock.
func (l *Ledger) updateLocked(tmp *os.File, fn func([]Entry) ([]Entry, error)) error {
	if now := time.Now(); now.Sub(l.swept) > staleTemp {
		l.swept = now
		removeStaleTemps(l.dir, now)
	}
	b, err := l.modifyLocked(fn)
	if err != nil {
		dropTemp(tmp)
		return err
	}
	return writeTemp(tmp, l.path, b)
}

// pruneEvery is the size up to which every write prunes the file, and
// past which about that many entries' worth of /proc reads are spread
// over each write (see the package doc).
const pruneEvery = 64

// modifyLocked reads, applies fn, prunes what fn left, and returns the
// file to write; the caller holds turn and the file lock. The prune comes
// after fn, so that it does not look at the entries fn drops: the release
// of a stopped batch drops every entry of the batch, and a prune before it
// read /proc and the cgroup files of each of those dead groups, for
// nothing (5000 of them at the end of a clean stop of 5000 units).
func (l *Ledger) modifyLocked(fn func([]Entry) ([]Entry, error)) ([]byte, error) {
	boot, entries, lines, err := l.readLocked()
	if err != nil {
		return nil, err
	}
	// fn may change what it is given, even inside Argv: it gets a deep copy,
	// and entries keeps what the lines encode. Room for a few more entries
	// spares an Add the copy of the whole slice.
	l.given, l.argv = cloneInto(l.given, l.argv, entries, 8)
	out, err := fn(l.given)
	if err != nil {
		return nil, err
	}
	if l.unpruned++; len(out) <= pruneEvery || l.unpruned*pruneEvery >= len(out) {
		out = prune(out)
		l.unpruned = 0
	}
	b, err := marshalReusing(l.wbuf, fileBoot(), out, snapshot{boot: boot, entries: entries, lines: lines}, true)
	if err != nil {
		return nil, fmt.Errorf("ledger: encode: %w", err)
	}
	l.wbuf = b
	return b, nil
}

// readLocked reads the file; the caller holds turn and the file lock. It
// returns the entries and, when the file is in the canonical layout, the
// line of each. A corrupt file is moved aside and replaced by what Rebuild
// finds alive of this state directory's spawns.
func (l *Ledger) readLocked() (boot string, _ []*Entry, _ []string, _ error) {
	b, err := readFile(l.path, l.rbuf)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil, nil, nil
	}
	var perr error
	switch {
	case errors.Is(err, syscall.EISDIR):
		// Nothing can be written in its place: keep it aside like a
		// corrupt file rather than fail every spawn.
		perr = fmt.Errorf("%w: a directory, not a file", ErrCorrupt)
	case err != nil:
		return "", nil, nil, fmt.Errorf("ledger: %w", err)
	default:
		l.rbuf = b
		var snap snapshot
		if snap, perr = l.parse(b); perr == nil {
			return snap.boot, snap.entries, snap.lines, nil
		}
	}
	aside := fmt.Sprintf("%s.corrupt-%s", l.path, time.Now().UTC().Format("20060102T150405.000000000Z"))
	if err := os.Rename(l.path, aside); err != nil {
		return "", nil, nil, fmt.Errorf("ledger: %s is corrupt (%v) and could not be moved aside: %w", l.path, perr, err)
	}
	rebuilt, err := Rebuild(l.Dir())
	if err != nil {
		return "", nil, nil, fmt.Errorf("ledger: %s was corrupt (moved to %s); rebuild from /proc failed: %w", l.path, aside, err)
	}
	return "", pointers(rebuilt), nil, nil
}

// parse is Parse, fast on a file in the canonical layout whose lines this
// Ledger has mostly seen before (see parseCanonical). The snapshot has the
// line of each entry when the layout is canonical, else no lines. Its
// entries are shared with the Ledger's cache: the caller must not change
// them. b is not retained.
func (l *Ledger) parse(b []byte) (snapshot, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	next, err := parseCanonical(b, l.last)
	if err == nil {
		l.last = next
		return next, nil
	}
	l.last = snapshot{}
	entries, err := Parse(b)
	return snapshot{entries: pointers(entries)}, err
}

func pointers(es []Entry) []*Entry {
	out := make([]*Entry, len(es))
	for i := range es {
		out[i] = &es[i]
	}
	return out
}

// Add records entries. Their Argv is stored redacted (see Redact), as is
// that of any entry an Update writes anew.
func (l *Ledger) Add(ctx context.Context, es ...Entry) error {
	add := make([]Entry, len(es))
	for i, e := range es {
		e.Argv = Redact(e.Argv)
		add[i] = e
	}
	return l.Update(ctx, func(cur []Entry) ([]Entry, error) {
		return append(cur, add...), nil
	})
}

// Remove drops every entry for which match reports true.
func (l *Ledger) Remove(ctx context.Context, match func(Entry) bool) error {
	return l.Update(ctx, func(cur []Entry) ([]Entry, error) {
		out := cur[:0]
		for _, e := range cur {
			if !match(e) {
				out = append(out, e)
			}
		}
		return out, nil
	})
}

// Entries returns the entries as last written, without taking the lock: the
// file is only ever replaced by rename, so this is a consistent snapshot. It
// does not prune (dead entries go at a later write, see the package doc; use Entry.Alive). A
// corrupt file is repaired through Update (moved aside, rebuilt) and the
// result returned.
func (l *Ledger) Entries(ctx context.Context) ([]Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(l.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil && !errors.Is(err, syscall.EISDIR) {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	if parsed, err := l.parse(b); err == nil {
		return cloneEntries(parsed.entries, 0), nil
	}
	var snap []Entry
	err = l.Update(ctx, func(cur []Entry) ([]Entry, error) {
		snap = cloneEntries(pointers(cur), 0)
		return cur, nil
	})
	return snap, err
}
