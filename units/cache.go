package units

import (
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Cache keeps what loading each unit file gave, so that a Loader with a
// Cache reads and parses again only the files that changed: a reload
// after one edit among thousands of units costs a stat of each file and
// the parse of one; told which files may have changed (Loader.Changes),
// the stat and the parse of one, no listing of the directory, and no
// work for the other files (see Loader.Changes). A file that did not
// change gives the *Spec it gave before, the Cache's own: the specs of a
// Loader with a Cache are shared by every load that gives them, and
// nobody modifies them (copy one to change it). A file
// is unchanged while its identity is the one it
// had when it was read: the file a path names (through symlinks: a
// ConfigMap's ..data swap changes it), device, inode, size, mode, owner,
// modification and change times. A file changed within cacheTrust of its
// read is read again at every load until it is older: a write in the
// same tick of the file system's clock as the read would leave every
// time as it was. The cache forgets it all when the loader's settings
// (defaults, Insecure, Unprivileged) change. The zero value is ready; a Cache may be
// shared by the Loaders of one goroutine after another, and is safe for
// concurrent use.
type Cache struct {
	mu       sync.Mutex
	entries  map[string]cached   // by path
	dirs     map[string]*lastDir // by directory, as LoadDir was given it (Loader.Changes)
	gen      uint64              // bumped when the settings change
	defaults Defaults            // the settings entries were loaded with
	insecure bool
	unpriv   bool
	// looked and read count the files whose identity was read (a stat)
	// and the files read and parsed, for the tests.
	looked, read int
}

// lastDir is what the last LoadDir of a directory found: what a load
// told which files changed (Loader.Changes) starts from.
type lastDir struct {
	names []string // its unit files' names, sorted; never modified (relist copies)
	// dir is what the load gave (its Dir and the Dirs patched from it
	// share their maps, and nobody modifies them); nil when the load did
	// not end, or loaded files laid over the directory (LoadDirWith).
	dir *Dir
	// unsure names the files of dir whose entry does not vouch for them
	// without a look at the file (see get): read within cacheTrust, or
	// through a symbolic link.
	unsure []string
}

// cacheTrust is how old a file's change time must be, when it was read,
// for its identity to vouch for its content (a variable for the tests).
var cacheTrust = 2 * time.Second

type cached struct {
	id     fileID
	base   string
	trust  bool // the change time was over cacheTrust before the read
	link   bool // the path was a symbolic link: its target may change with no event in the directory
	spec   *Spec
	refs   refs
	errs   Errors
	loaded bool // used by the load in progress (see sweep)
}

// fileID is what says a file is the one that was read.
type fileID struct {
	dev, ino   uint64
	size       int64
	mode, uid  uint32
	mtim, ctim unix.Timespec
}

func statID(path string) (fileID, error) {
	var st unix.Stat_t
	// A stat on a slow filesystem (FUSE, NFS) can be interrupted by the
	// runtime's preemption signal, as os.Stat knows: retried, not a miss.
	err := unix.Stat(path, &st)
	for err == unix.EINTR {
		err = unix.Stat(path, &st)
	}
	if err != nil {
		return fileID{}, err
	}
	// The conversions: the field types differ by platform.
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino), size: st.Size, mode: uint32(st.Mode), uid: st.Uid, mtim: st.Mtim, ctim: st.Ctim}, nil
}

// settle resets the cache when l's settings differ from those its entries
// were loaded with, and returns the generation of the entries l may use:
// get and put of another generation miss and do nothing, so that a load
// with other settings meanwhile never mixes its entries with l's. Called
// once a load (a comparison of the defaults each file cost as much as
// the file's stat).
func (c *Cache) settle(l *Loader) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := l.defaults()
	if c.entries == nil || c.insecure != l.Insecure || c.unpriv != l.Unprivileged || !reflect.DeepEqual(c.defaults, d) {
		c.entries, c.dirs, c.defaults, c.insecure, c.unpriv = map[string]cached{}, map[string]*lastDir{}, d, l.Insecure, l.Unprivileged
		c.gen++
	}
	return c.gen
}

// listing returns what the last LoadDir of dir found, if there is such
// a load (there is none after new settings or a load of it that failed).
func (c *Cache) listing(gen uint64, dir string) (*lastDir, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	last, ok := c.dirs[dir]
	return last, ok && gen == c.gen
}

// list records what a LoadDir of dir found (its listing, then what it
// gave: see lastDir); nil forgets it, and the next load lists the
// directory.
func (c *Cache) list(gen uint64, dir string, last *lastDir) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if last == nil {
		delete(c.dirs, dir)
		return
	}
	c.dirs[dir] = last
}

// unsure returns the names, among names, of the files of dir whose entry
// does not vouch for them without a look (lastDir.unsure).
func (c *Cache) unsure(dir string, names []string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, n := range names {
		if e, ok := c.entries[filepath.Join(dir, n)]; !ok || !e.trust || e.link {
			out = append(out, n)
		}
	}
	return out
}

// get returns what loading path against base gave, if the file is
// unchanged since; id is the file's identity now, for put. With look
// false the file is known unchanged since its entry was made (nothing
// changed it: Loader.Changes), and a trusted entry of a path that is no
// symbolic link is taken without a look at the file.
func (c *Cache) get(gen uint64, path, base string, look bool) (s *Spec, r refs, errs Errors, id fileID, ok bool) {
	if !look {
		c.mu.Lock()
		if e, hit := c.entries[path]; hit && e.trust && !e.link {
			defer c.mu.Unlock()
			return c.hitLocked(gen, path, base, e.id)
		}
		c.mu.Unlock()
	}
	id, err := statID(path)
	if err != nil {
		return nil, refs{}, nil, fileID{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.looked++
	return c.hitLocked(gen, path, base, id)
}

// hitLocked is get's answer for the file at path whose identity is id.
// The caller holds c.mu.
func (c *Cache) hitLocked(gen uint64, path, base string, id fileID) (s *Spec, r refs, errs Errors, _ fileID, ok bool) {
	e, hit := c.entries[path]
	if !hit || gen != c.gen || !e.trust || e.id != id || e.base != base {
		return nil, refs{}, nil, id, false
	}
	e.loaded = true
	c.entries[path] = e
	// A copy of the errors: callers append to them.
	return e.spec, e.refs, slices.Clone(e.errs), id, true
}

// put records what loading path gave, the file having had identity id
// just before it was read at readAt; link says the path is a symbolic
// link. s is the Cache's from then on: nobody modifies it.
func (c *Cache) put(gen uint64, path, base string, id fileID, link bool, readAt time.Time, s *Spec, r refs, errs Errors) {
	ctime := time.Unix(int64(id.ctim.Sec), int64(id.ctim.Nsec))
	e := cached{id: id, base: base, trust: readAt.Sub(ctime) > cacheTrust, link: link, spec: s, refs: r, errs: slices.Clone(errs), loaded: true}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.read++
	if gen == c.gen {
		c.entries[path] = e
	}
}

// sweep drops the entries no load used since the last sweep (files
// removed or renamed), and starts the next round.
func (c *Cache) sweep() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, e := range c.entries {
		if !e.loaded {
			delete(c.entries, p)
			continue
		}
		e.loaded = false
		c.entries[p] = e
	}
}
