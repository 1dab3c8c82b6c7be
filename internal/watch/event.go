package watch

import (
	"strings"
	"sync"
)

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

// relay is the half of a source that its one reader goroutine sends
// through, alike on every platform: each read's events on evc and a read
// error on errc, until quit; the reader closes evc, then done, when it
// returns.
type relay struct {
	evc  chan []event
	errc chan error
	quit chan struct{} // closed by stop: the reader stops sending
	done chan struct{} // closed when the reader returns
	once sync.Once
}

// init makes the channels; it is called before the reader starts.
func (r *relay) init() {
	r.evc = make(chan []event)
	r.errc = make(chan error)
	r.quit = make(chan struct{})
	r.done = make(chan struct{})
}

func (r *relay) events() <-chan []event { return r.evc }
func (r *relay) errors() <-chan error   { return r.errc }

// send hands evs to Run, unless stop comes first; it reports whether it
// did. Called by the reader only.
func (r *relay) send(evs []event) bool {
	select {
	case r.evc <- evs:
		return true
	case <-r.quit:
		return false
	}
}

// fail hands err to Run, unless stop comes first; it reports whether it
// did. Called by the reader only.
func (r *relay) fail(err error) bool {
	select {
	case r.errc <- err:
		return true
	case <-r.quit:
		return false
	}
}

// stop tells the reader to stop sending, closes the kernel's side with
// closeSource (which ends the reader's read), and waits for the reader.
// Events not yet taken are dropped. It may be called more than once; only
// the first call closes, and returns closeSource's error.
func (r *relay) stop(closeSource func() error) error {
	var err error
	r.once.Do(func() {
		close(r.quit)
		err = closeSource()
	})
	<-r.done
	return err
}
