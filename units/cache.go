package units

import (
	"reflect"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Cache keeps what loading each unit file gave, so that a Loader with a
// Cache reads and parses again only the files that changed: a reload
// after one edit among thousands of units costs a stat of each file and
// the parse of one. A file is unchanged while its identity is the one it
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
	entries  map[string]cached // by path
	defaults Defaults          // the settings entries were loaded with
	insecure bool
	unpriv   bool
}

// cacheTrust is how old a file's change time must be, when it was read,
// for its identity to vouch for its content (a variable for the tests).
var cacheTrust = 2 * time.Second

type cached struct {
	id     fileID
	base   string
	trust  bool // the change time was over cacheTrust before the read
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
	if err := unix.Stat(path, &st); err != nil {
		return fileID{}, err
	}
	// The conversions: the field types differ by platform.
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino), size: st.Size, mode: uint32(st.Mode), uid: st.Uid, mtim: st.Mtim, ctim: st.Ctim}, nil
}

// settle resets the cache when l's settings differ from those its entries
// were loaded with. The caller holds c.mu.
func (c *Cache) settle(l *Loader) {
	d := l.defaults()
	if c.entries == nil || c.insecure != l.Insecure || c.unpriv != l.Unprivileged || !reflect.DeepEqual(c.defaults, d) {
		c.entries, c.defaults, c.insecure, c.unpriv = map[string]cached{}, d, l.Insecure, l.Unprivileged
	}
}

// get returns what loading path against base gave, if the file is
// unchanged since; id is the file's identity now, for put.
func (c *Cache) get(l *Loader, path, base string) (s *Spec, r refs, errs Errors, id fileID, ok bool) {
	id, err := statID(path)
	if err != nil {
		return nil, refs{}, nil, fileID{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settle(l)
	e, hit := c.entries[path]
	if !hit || !e.trust || e.id != id || e.base != base {
		return nil, refs{}, nil, id, false
	}
	e.loaded = true
	c.entries[path] = e
	// Copies: callers append to the errors and keep the spec.
	if e.spec != nil {
		cp := *e.spec
		s = &cp
	}
	return s, e.refs, slices.Clone(e.errs), id, true
}

// put records what loading path gave, the file having had identity id
// just before it was read at readAt.
func (c *Cache) put(l *Loader, path, base string, id fileID, readAt time.Time, s *Spec, r refs, errs Errors) {
	ctime := time.Unix(int64(id.ctim.Sec), int64(id.ctim.Nsec))
	e := cached{id: id, base: base, trust: readAt.Sub(ctime) > cacheTrust, refs: r, errs: slices.Clone(errs), loaded: true}
	if s != nil {
		cp := *s
		e.spec = &cp
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settle(l)
	c.entries[path] = e
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
