// Package watch tells the daemon that the units directory or the config
// file may have changed. A notification says nothing of what changed: the
// reconciler is level-based and loads and diffs on every notification, so
// a spurious notification costs a load and a missed one would cost
// correctness; the rules below lean towards notifying. What changed is
// kept apart (Changed): the names in the units directory that had an
// event, so that a load can look at those files alone; anything it cannot
// pin to names (the directory swapped, the config file, a projected
// volume's update, lost events) asks for a look at everything.
//
// What counts:
//   - in the units directory, any create, write, remove or rename of a name
//     that Ignored does not reject; an editor's atomic save (write a temp
//     file, rename it onto the unit's name) counts through the rename's
//     arrival under the unit's name;
//   - a chmod only when the permission bits really changed (a touch does not
//     count; a file made unreadable does);
//   - the units directory itself appearing, disappearing or being swapped for
//     another directory (watched through its parent; the watch is re-added
//     on the new directory);
//   - the config file written, created, removed, or replaced by a rename
//     (watched through its directory, filtered by name);
//   - the "..data" link of a units directory the kubelet projects from a
//     ConfigMap or Secret replaced (ProjectedData): one update of the
//     volume, whatever number of unit files it changes, is one
//     notification.
//
// When: a change whose end an event marks is notified at once, with no
// quiet period. On Linux those events are a rename bringing a unit file
// (units.IsUnitFile), the config file or the units directory in
// (IN_MOVED_TO: rename-over saves, sed -i, directory swaps) and a
// projected volume's "..data" link renamed in, a unit file or the config
// file closed after writing (IN_CLOSE_WRITE: saves in place, vim's
// backup-then-write), a unit file created as a symlink, a directory
// created, and a real chmod. Events
// of one read from the kernel are classified together, so a burst the
// kernel queued at once is one notification; a notification nobody has
// read yet absorbs later ones. Every other change (a write not yet closed,
// a removal or a rename away, which may be the first half of a save or a
// swap, a scratch name's rename) waits for Options.Debounce without another
// event, and a completed change ends that wait. Other kernels report no
// close and no rename-into, so every change there waits for the quiet
// period.
//
// Paths that do not exist yet are watched through their nearest existing
// ancestor, so a units directory created after start is picked up.
// Subdirectories of the units directory are not watched.
package watch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/units"
)

// DefaultDebounce is the quiet time that ends a burst of changes no event
// completes, when Options.Debounce is zero.
const DefaultDebounce = 50 * time.Millisecond

// Options says what to watch.
type Options struct {
	Dir      string        // the units directory; may not exist yet
	Config   string        // the main config file; empty for none; may not exist yet
	Debounce time.Duration // quiet time that ends a burst of changes no event completes; 0 means DefaultDebounce
}

// Watcher watches the units directory and the config file. New sets up the
// watches, so every change after New returns is reported once Run runs; Run
// must then be called (or Close, if it never will be).
type Watcher struct {
	dir, config string // absolute and clean; config may be empty
	src         source
	deb         *debouncer

	// observe, if set before Run, sees every event and its verdict, on Run's
	// goroutine, after the notification of its batch was sent; tests use it
	// to know which events were taken into account.
	observe func(ev event, v verdict)

	// Owned by Run's goroutine after New returns.
	watched map[string]fileID      // watched directory → its identity when added
	modes   map[string]fs.FileMode // entry name in dir or config path → last seen mode

	changed changes
}

// changes is what changed since Changed was last called: recorded by
// Run's goroutine before it notifies, taken by a load.
type changes struct {
	mu    sync.Mutex
	names map[string]bool // base names of entries of the units directory; guarded by mu
	all   bool            // something not pinned to names changed; guarded by mu
}

// name records a change of the entry base of the units directory.
func (c *changes) name(base string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.all {
		c.names[base] = true
	}
}

// everything records a change not pinned to names.
func (c *changes) everything() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all, c.names = true, map[string]bool{}
}

// Changed returns what changed since its last call (everything, at the
// first), and starts a new record: the base names of the entries of the
// units directory that had an event that counts (see the package doc),
// or all true when a change is not pinned to names, and every file must
// be looked at: a watch re-added after the units directory (or a
// directory above it) came, went or was swapped, the config file's events
// (the defaults of every unit), a projected volume's "..data" link, and
// events lost (a queue overflow, a read error). A file changed behind a
// symbolic link of the directory, or through another hard link, is not
// named: a load looks at such files anyway, or at a reload asked for.
// Every change recorded is recorded before its notification is sent (see
// Changes): a load that follows a notification and calls Changed sees it.
// Safe for concurrent use.
func (w *Watcher) Changed() (names []string, all bool) {
	c := &w.changed
	c.mu.Lock()
	defer c.mu.Unlock()
	names, all = slices.Sorted(maps.Keys(c.names)), c.all
	c.names, c.all = map[string]bool{}, false
	return names, all
}

type fileID struct{ dev, ino uint64 }

// dirID returns the identity of the directory at p, if p is one (following
// symbolic links, as the watch does).
func dirID(p string) (fileID, bool) {
	fi, err := os.Stat(p)
	if err != nil || !fi.IsDir() {
		return fileID{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, true
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, true
}

// New validates opts and starts watching. Dir is required.
func New(opts Options) (*Watcher, error) {
	if opts.Dir == "" {
		return nil, errors.New("watch: no units directory given")
	}
	if opts.Debounce < 0 {
		return nil, fmt.Errorf("watch: debounce %v is negative", opts.Debounce)
	}
	if opts.Debounce == 0 {
		opts.Debounce = DefaultDebounce
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("watch units directory: %w", err)
	}
	var config string
	if opts.Config != "" {
		if config, err = filepath.Abs(opts.Config); err != nil {
			return nil, fmt.Errorf("watch config file: %w", err)
		}
	}
	src, err := newSource()
	if err != nil {
		return nil, fmt.Errorf("watch units directory %s: %w (raise fs.inotify.max_user_instances if this is too many open inotify instances)", dir, err)
	}
	w := &Watcher{
		dir:     dir,
		config:  config,
		src:     src,
		deb:     newDebouncer(opts.Debounce),
		watched: make(map[string]fileID),
		modes:   make(map[string]fs.FileMode),
		changed: changes{names: map[string]bool{}, all: true},
	}
	moved, err := w.sync()
	if err != nil {
		src.close()
		return nil, err
	}
	if !moved { // sync took the snapshot when it added the units directory's watch
		w.snapshotModes()
	}
	return w, nil
}

// Changes delivers one value per completed change or burst of changes
// (see the package doc for when). It is buffered (capacity 1) and
// coalescing: a change notified while a value is pending is folded into it.
// It is never closed.
func (w *Watcher) Changes() <-chan struct{} { return w.deb.out }

// Close releases the watches of a Watcher whose Run is never called.
func (w *Watcher) Close() error { return w.src.close() }

// Run processes file system events until ctx ends, then closes the watches,
// waits for its debouncer and returns nil. It returns an error only if the
// event stream ends for another reason. Run is called once.
func (w *Watcher) Run(ctx context.Context) error {
	defer w.src.close()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.deb.run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case evs, ok := <-w.src.events():
			if !ok {
				return errors.New("watch: event stream closed")
			}
			// One batch, one verdict: a completed change anywhere in it
			// notifies once, at its end; a change after the last completed
			// one still waits for the quiet period.
			vs := make([]verdict, len(evs))
			complete, dirty := false, false
			for i, ev := range evs {
				vs[i] = w.classify(ev)
				switch vs[i] {
				case verdictComplete:
					complete, dirty = true, false
				case verdictQuiet:
					dirty = true
				}
			}
			if complete {
				w.deb.notify()
			}
			if dirty {
				w.deb.trigger()
			}
			if w.observe != nil {
				for i, ev := range evs {
					w.observe(ev, vs[i])
				}
			}
		case <-w.src.errors():
			// A read error lost events, and may end the stream (the next
			// receive then says so): the rescan a notification causes
			// recovers what was lost.
			_, _ = w.sync()
			w.changed.everything()
			w.deb.notify()
		}
	}
}

// verdict is what one event means for the notifications.
type verdict uint8

const (
	verdictNone     verdict = iota // not a change (a scratch file, a touch, another file beside the config)
	verdictQuiet                   // a change no event completes yet: notified after the quiet period
	verdictComplete                // a completed change: notified at once
)

// classify gives one event its verdict, re-adding watches when a watched
// directory or an ancestor of a watched path came or went.
func (w *Watcher) classify(ev event) verdict {
	if ev.op.has(opOverflow) {
		// Events were lost: watch what is there now, and rescan.
		_, _ = w.sync()
		w.changed.everything()
		return verdictComplete
	}
	name := filepath.Clean(ev.name)
	v := verdictNone
	raise := func(to verdict) {
		v = max(v, to)
	}
	structural := ev.op.has(opCreate | opRemove | opRename | opMovedTo)
	if structural && (isAncestorOrSelf(name, w.dir) || (w.config != "" && isAncestorOrSelf(name, filepath.Dir(w.config)))) {
		// Errors leave a path unwatched until the next structural event
		// above it. A watch that moved onto or off the units directory
		// counts: files may have come or gone with it without an event of
		// their own; so does the config file appearing or vanishing with
		// its directory.
		moved, _ := w.sync()
		if moved || name == w.dir || w.configMoved() {
			w.changed.everything()
			// A directory that arrived (created, or renamed in: the
			// second half of a swap) is complete; one that left may be
			// the first half of a swap.
			if ev.op.has(opCreate | opMovedTo) {
				raise(verdictComplete)
			} else {
				raise(verdictQuiet)
			}
		}
	}
	if p := w.projected(ev, name); p != verdictNone {
		w.changed.everything()
		raise(p)
	}
	inDir := filepath.Dir(name) == w.dir && !Ignored(filepath.Base(name))
	isConfig := w.config != "" && name == w.config
	if (inDir || isConfig) && w.counts(ev, name) {
		if isConfig {
			w.changed.everything()
		} else {
			w.changed.name(filepath.Base(name))
		}
		switch {
		case ev.op.has(opMovedTo|opCloseWrite) && (isConfig || units.IsUnitFile(filepath.Base(name))):
			raise(verdictComplete)
		case ev.op.has(opCreate) && !isConfig && units.IsUnitFile(filepath.Base(name)) && isSymlink(name):
			raise(verdictComplete) // symlink(2) makes a link whole: no write follows
		case ev.op == opChmod:
			raise(verdictComplete) // a real mode change is whole in itself
		default:
			raise(verdictQuiet)
		}
	}
	return v
}

// projected is the verdict of an event on a projected volume's ..data link
// (ProjectedData) in the units directory: every unit file behind it changed
// at once, with no event of its own (the files are in a directory not
// watched), and the rename in is the whole update.
func (w *Watcher) projected(ev event, name string) verdict {
	switch {
	case filepath.Dir(name) != w.dir || filepath.Base(name) != ProjectedData:
		return verdictNone
	case ev.op.has(opMovedTo):
		return verdictComplete
	case ev.op.has(opCreate | opRename | opRemove):
		return verdictQuiet
	}
	return verdictNone
}

// counts reports whether an event on a file of interest counts as a change:
// everything but a chmod that left the permission bits as they were.
func (w *Watcher) counts(ev event, name string) bool {
	fi, err := os.Stat(name)
	if err != nil {
		_, known := w.modes[name]
		delete(w.modes, name)
		return !ev.op.has(opChmod) || known
	}
	old, known := w.modes[name]
	w.modes[name] = fi.Mode()
	if ev.op == opChmod {
		return !known || old != fi.Mode()
	}
	return true
}

// configMoved reports whether the config file appeared, vanished or changed
// mode since last seen, updating what was seen.
func (w *Watcher) configMoved() bool {
	if w.config == "" {
		return false
	}
	old, known := w.modes[w.config]
	fi, err := os.Stat(w.config)
	if err != nil {
		delete(w.modes, w.config)
		return known
	}
	w.modes[w.config] = fi.Mode()
	return !known || old != fi.Mode()
}

// snapshotModes records the modes of the files of interest, so that a later
// chmod can be told apart from a touch.
func (w *Watcher) snapshotModes() {
	if entries, err := os.ReadDir(w.dir); err == nil {
		for _, e := range entries {
			p := filepath.Join(w.dir, e.Name())
			if fi, err := os.Stat(p); err == nil && !Ignored(e.Name()) {
				w.modes[p] = fi.Mode()
			}
		}
	}
	if w.config != "" {
		if fi, err := os.Stat(w.config); err == nil {
			w.modes[w.config] = fi.Mode()
		}
	}
}

// sync makes the set of watched directories what the file system now calls
// for: the units directory and its parent when it exists (else its nearest
// existing ancestor), and the config file's directory (else its nearest
// existing ancestor). A watched path whose directory was swapped for another
// is re-added, since an inotify watch follows the old inode. It reports
// whether the watch on the units directory was added or dropped.
//
// Adding a watch races with the file system: a directory created below an
// ancestor before the ancestor's watch was in place sends no event. So sync
// looks again after every change it makes, until what it wants is what it
// watches; every later change then sends an event.
func (w *Watcher) sync() (moved bool, err error) {
	var errs []error
	for range 16 { // bounded: a path that keeps changing is retried on its next event
		want := w.wanted()
		stable := true
		for p, id := range w.watched {
			if nid, ok := want[p]; !ok || nid != id {
				_ = w.src.remove(p) // fails when the kernel already dropped it
				delete(w.watched, p)
				moved = moved || p == w.dir
				stable = false
			}
		}
		errs = errs[:0]
		for p, id := range want {
			if _, ok := w.watched[p]; ok {
				continue
			}
			stable = false
			if err := w.src.add(p); err != nil {
				// A directory that vanished between wanted and Add is
				// not an error: the next round watches its nearest
				// existing ancestor instead. Leaving it would leave
				// nothing watched above it, and no event would ever come.
				if !errors.Is(err, fs.ErrNotExist) {
					errs = append(errs, fmt.Errorf("watch %s: %w", p, err))
				}
				continue
			}
			w.watched[p] = id
			moved = moved || p == w.dir
			if p == w.dir {
				// Files that appeared before the watch was in place.
				w.snapshotModes()
			}
		}
		if stable || len(errs) > 0 {
			break
		}
	}
	return moved, errors.Join(errs...)
}

// wanted returns the directories to watch now, with their identities.
func (w *Watcher) wanted() map[string]fileID {
	want := make(map[string]fileID)
	add := func(p string) {
		for {
			if id, ok := dirID(p); ok {
				want[p] = id
				return
			}
			parent := filepath.Dir(p)
			if parent == p {
				return
			}
			p = parent
		}
	}
	add(w.dir)
	if _, ok := want[w.dir]; ok {
		add(filepath.Dir(w.dir))
	}
	if w.config != "" {
		add(filepath.Dir(w.config))
	}
	return want
}

// ProjectedData is the name of the link through which a volume the
// kubelet projects (a ConfigMap's, a Secret's) shows its current version:
// each key is a symlink "web.yaml -> ..data/web.yaml", and an update writes
// a new hidden directory "..2026_12_05_…", makes a link "..data_tmp" to it
// and renames that over "..data". The rename is what the watcher reports;
// the hidden directories and links themselves are never unit files.
const ProjectedData = "..data"

// isSymlink reports whether p is a symbolic link (not followed).
func isSymlink(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode()&fs.ModeSymlink != 0
}

// Ignored reports whether a file name (not a path) in the units directory is
// an editor's or a tool's scratch file rather than a unit: vim swap files and
// its 4913 write probe, backups ending in '~', Emacs lock files (.#name),
// other hidden files, and *.tmp files.
func Ignored(name string) bool {
	switch {
	case name == "4913":
		return true
	case strings.HasPrefix(name, "."): // hidden, .#lock, .name.swp, .name.swx
		return true
	case strings.HasSuffix(name, "~"):
		return true
	case strings.HasSuffix(name, ".swp"), strings.HasSuffix(name, ".swx"), strings.HasSuffix(name, ".tmp"):
		return true
	case strings.HasPrefix(name, "#") && strings.HasSuffix(name, "#"): // Emacs auto-save
		return true
	}
	return false
}

func isAncestorOrSelf(p, of string) bool {
	return p == of || strings.HasPrefix(of, p+string(filepath.Separator)) || (p == "/" && strings.HasPrefix(of, "/"))
}
