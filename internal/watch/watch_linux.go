package watch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// inotifyMask is what every watched directory reports. IN_CLOSE_WRITE and
// IN_MOVED_TO are the two events that mark a save complete; fsnotify does
// not export the first, which is why Linux reads inotify itself.
const inotifyMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_ATTRIB |
	unix.IN_CLOSE_WRITE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// inotify is the Linux source: one inotify instance read through the
// runtime's poller (the descriptor is non-blocking, so no thread waits on
// it), by one reader goroutine that close joins.
type inotify struct {
	f *os.File
	relay

	mu    sync.Mutex
	wdOf  map[string]int   // watched path → its watch descriptor; guarded by mu
	paths map[int][]string // watch descriptor → the watched paths it serves (one inode may be reached by two paths); guarded by mu
}

func newSource() (source, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify_init1: %w", err)
	}
	s := &inotify{
		f:     os.NewFile(uintptr(fd), "inotify"),
		wdOf:  make(map[string]int),
		paths: make(map[int][]string),
	}
	s.relay.init()
	go s.read()
	return s, nil
}

func (s *inotify) add(dir string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.wdOf[dir]; ok {
		return nil
	}
	wd, err := unix.InotifyAddWatch(int(s.f.Fd()), dir, inotifyMask)
	if err != nil {
		if errors.Is(err, unix.ENOSPC) {
			return &os.PathError{Op: "inotify_add_watch", Path: dir, Err: fmt.Errorf("%w (raise fs.inotify.max_user_watches)", err)}
		}
		return &os.PathError{Op: "inotify_add_watch", Path: dir, Err: err}
	}
	s.wdOf[dir] = wd
	s.paths[wd] = append(s.paths[wd], dir)
	return nil
}

func (s *inotify) remove(dir string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	wd, ok := s.wdOf[dir]
	if !ok {
		return fmt.Errorf("watch %s: not watched", dir)
	}
	delete(s.wdOf, dir)
	rest := s.paths[wd][:0]
	for _, p := range s.paths[wd] {
		if p != dir {
			rest = append(rest, p)
		}
	}
	if len(rest) > 0 {
		s.paths[wd] = rest
		return nil
	}
	delete(s.paths, wd)
	if _, err := unix.InotifyRmWatch(int(s.f.Fd()), uint32(wd)); err != nil {
		// EINVAL: the kernel dropped it already (the directory is gone).
		return &os.PathError{Op: "inotify_rm_watch", Path: dir, Err: err}
	}
	return nil
}

// close ends the reader and waits for it (relay.stop).
func (s *inotify) close() error { return s.stop(s.f.Close) }

// read reads the inotify descriptor and sends each read's events as one
// batch. It ends when close closes the descriptor, or after sending a read
// error, closing the events channel then.
func (s *inotify) read() {
	defer close(s.done)
	defer close(s.evc)
	var buf [64 << 10]byte // room for ≥ 250 events of the longest name
	for {
		n, err := s.f.Read(buf[:])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				s.fail(fmt.Errorf("read inotify: %w", err))
			}
			return
		}
		if evs := s.decode(buf[:n]); len(evs) > 0 && !s.send(evs) {
			return
		}
	}
}

// decode turns one read's raw events into events named by path. Events on
// a watch descriptor removed meanwhile are dropped; IN_IGNORED (the kernel
// dropped a watch) forgets the descriptor.
func (s *inotify) decode(b []byte) []event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var evs []event
	for len(b) >= unix.SizeofInotifyEvent {
		raw := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		end := unix.SizeofInotifyEvent + int(raw.Len)
		if end > len(b) {
			break // the kernel never splits an event; a short buffer is a bug elsewhere
		}
		nameBytes := b[unix.SizeofInotifyEvent:end]
		b = b[end:]
		mask := raw.Mask
		if mask&unix.IN_Q_OVERFLOW != 0 {
			evs = append(evs, event{op: opOverflow})
			continue
		}
		paths := s.paths[int(raw.Wd)]
		if mask&(unix.IN_IGNORED|unix.IN_UNMOUNT) != 0 {
			for _, p := range paths {
				delete(s.wdOf, p)
			}
			delete(s.paths, int(raw.Wd))
			continue
		}
		var o op
		for _, m := range []struct {
			in uint32
			op op
		}{
			{unix.IN_CREATE, opCreate}, {unix.IN_MODIFY, opWrite},
			{unix.IN_DELETE | unix.IN_DELETE_SELF, opRemove},
			{unix.IN_MOVED_FROM | unix.IN_MOVE_SELF, opRename},
			{unix.IN_ATTRIB, opChmod}, {unix.IN_MOVED_TO, opMovedTo},
			{unix.IN_CLOSE_WRITE, opCloseWrite},
		} {
			if mask&m.in != 0 {
				o |= m.op
			}
		}
		if o == 0 {
			continue
		}
		name := ""
		if i := indexNUL(nameBytes); i >= 0 {
			name = string(nameBytes[:i])
		} else {
			name = string(nameBytes)
		}
		for _, p := range paths {
			full := p
			if name != "" {
				full = filepath.Join(p, name)
			}
			evs = append(evs, event{name: full, op: o})
		}
	}
	return evs
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}
