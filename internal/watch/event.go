package watch

import "strings"

// op is what happened to a name, as the event sources report it. Linux's
// inotify source reports every op; the fsnotify source used elsewhere has
// neither opMovedTo (a rename into a directory is an opCreate there) nor
// opCloseWrite, so every change it reports waits out the quiet period.
type op uint32

const (
	opCreate     op = 1 << iota // a name appeared (IN_CREATE)
	opWrite                     // a file's content changed (IN_MODIFY)
	opRemove                    // a name was unlinked, or a watched directory deleted (IN_DELETE, IN_DELETE_SELF)
	opRename                    // a name was renamed away, or a watched directory moved (IN_MOVED_FROM, IN_MOVE_SELF)
	opChmod                     // attributes changed (IN_ATTRIB)
	opMovedTo                   // a rename brought a name in (IN_MOVED_TO): an atomic save is complete
	opCloseWrite                // a file opened for writing was closed (IN_CLOSE_WRITE): a save in place is complete
	opOverflow                  // the kernel's queue overflowed and events were lost (IN_Q_OVERFLOW)
)

var opNames = []string{"CREATE", "WRITE", "REMOVE", "RENAME", "CHMOD", "MOVED_TO", "CLOSE_WRITE", "OVERFLOW"}

func (o op) has(x op) bool { return o&x != 0 }

func (o op) String() string {
	var b strings.Builder
	for i, n := range opNames {
		if o&(1<<i) != 0 {
			if b.Len() > 0 {
				b.WriteByte('|')
			}
			b.WriteString(n)
		}
	}
	if b.Len() == 0 {
		return "0"
	}
	return b.String()
}

// event is one file system event: name is the path of the entry (or of
// the watched directory itself, for events on it).
type event struct {
	name string
	op   op
	dir  bool // the entry is a directory (IN_ISDIR)
}

// source delivers the file system events of a set of watched directories.
// add and remove are called from one goroutine at a time (New, then Run's);
// events and errors are read by Run.
type source interface {
	add(dir string) error
	remove(dir string) error
	// events delivers the events of one read from the kernel together, so
	// that a burst is classified, and notified, once.
	events() <-chan []event
	errors() <-chan error
	close() error
}
