//go:build !linux

package watch

import (
	"os"
	"sync"
	"syscall"

	"github.com/fsnotify/fsnotify"
)

// fsnotifySource is the source on kernels other than Linux. fsnotify does
// not report a close after a write, and reports a rename into a directory
// as a create, so no event it sends marks a save complete: every change
// waits out the quiet period (Options.Debounce).
type fsnotifySource struct {
	w    *fsnotify.Watcher
	evc  chan []event
	errc chan error
	quit chan struct{}
	done chan struct{}
	once sync.Once
}

func newSource() (source, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	s := &fsnotifySource{w: fw, evc: make(chan []event), errc: make(chan error), quit: make(chan struct{}), done: make(chan struct{})}
	go s.relay()
	return s, nil
}

func (s *fsnotifySource) relay() {
	defer close(s.done)
	defer close(s.evc)
	for {
		select {
		case ev, ok := <-s.w.Events:
			if !ok {
				return
			}
			var o op
			for _, m := range []struct {
				in fsnotify.Op
				op op
			}{{fsnotify.Create, opCreate}, {fsnotify.Write, opWrite}, {fsnotify.Remove, opRemove}, {fsnotify.Rename, opRename}, {fsnotify.Chmod, opChmod}} {
				if ev.Has(m.in) {
					o |= m.op
				}
			}
			select {
			case s.evc <- []event{{name: ev.Name, op: o}}:
			case <-s.quit:
				return
			}
		case err, ok := <-s.w.Errors:
			if !ok {
				return
			}
			if err == fsnotify.ErrEventOverflow {
				select {
				case s.evc <- []event{{op: opOverflow}}:
				case <-s.quit:
					return
				}
				continue
			}
			select {
			case s.errc <- err:
			case <-s.quit:
				return
			}
		case <-s.quit:
			return
		}
	}
}

func (s *fsnotifySource) add(dir string) error    { return s.w.Add(dir) }
func (s *fsnotifySource) remove(dir string) error { return s.w.Remove(dir) }
func (s *fsnotifySource) events() <-chan []event  { return s.evc }
func (s *fsnotifySource) errors() <-chan error    { return s.errc }

func (s *fsnotifySource) close() error {
	var err error
	s.once.Do(func() {
		close(s.quit)
		err = s.w.Close()
	})
	<-s.done
	return err
}

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
