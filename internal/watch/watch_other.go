//go:build !linux

package watch

import "github.com/fsnotify/fsnotify"

// fsnotifySource is the source on kernels other than Linux. fsnotify does
// not report a close after a write, and reports a rename into a directory
// as a create, so no event it sends marks a save complete: every change
// waits out the quiet period (Options.Debounce).
type fsnotifySource struct {
	w *fsnotify.Watcher
	relay
}

func newSource() (source, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	s := &fsnotifySource{w: fw}
	s.relay.init()
	go s.read()
	return s, nil
}

// read turns fsnotify's events into events, one a batch, until the
// watcher is closed or stop is called.
func (s *fsnotifySource) read() {
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
			if !s.send([]event{{name: ev.Name, op: o}}) {
				return
			}
		case err, ok := <-s.w.Errors:
			if !ok {
				return
			}
			if err == fsnotify.ErrEventOverflow {
				if !s.send([]event{{op: opOverflow}}) {
					return
				}
				continue
			}
			if !s.fail(err) {
				return
			}
		case <-s.quit:
			return
		}
	}
}

func (s *fsnotifySource) add(dir string) error    { return s.w.Add(dir) }
func (s *fsnotifySource) remove(dir string) error { return s.w.Remove(dir) }
func (s *fsnotifySource) close() error            { return s.stop(s.w.Close) }
