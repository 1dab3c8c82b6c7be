package control

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"
)

// staleProbe bounds the connect that tells a stale socket from a live one.
// A live daemon accepts at once (the kernel completes the connect from the
// backlog), so the bound only matters for a daemon that is wedged.
const staleProbe = 2 * time.Second

// maxSocketPath is the longest path a Unix socket can be bound at: the
// kernel's sun_path holds 108 bytes, the terminating NUL included.
const maxSocketPath = len(unix.RawSockaddrUnix{}.Path) - 1

// Listener is the control socket. It is a net.Listener that keeps its path
// reachable and removes only its own socket:
//
//   - A socket removed or renamed away while hermesd runs (a tmp cleaner, a
//     mistaken rm) is bound again at once: a watch on its directory
//     (inotify, no timer) reports it. Only a path still free, or holding a
//     stale socket, is taken: a live socket of another daemon there is left
//     alone, and so is any other file (both reported through logf).
//   - Close removes the socket only if the one at the path is still the one
//     this Listener bound (same device and inode), so that a daemon that
//     was moved off its path never removes its successor's socket.
type Listener struct {
	path string
	logf func(format string, args ...any)

	mu     sync.Mutex
	ln     *net.UnixListener // guarded by mu: the socket in use
	id     fileID            // guarded by mu: the device and inode of ln's file
	closed bool              // guarded by mu

	unwatch sync.Once
	stop    chan struct{} // closed by Unwatch: the watch goroutine ends
	done    chan struct{} // closed when the watch goroutine has ended
	w       *fsnotify.Watcher
}

type fileID struct{ dev, ino uint64 }

// Listen prepares path for the control socket and listens on it, and
// keeps the socket there until Close (see Listener); logf (nil discards)
// hears of every re-creation and of what kept one from happening.
//
// The directory is created with mode 0700 if it is missing; if it exists it
// must be a directory owned by the current effective uid with no group or
// other permission bits, or Listen refuses with ErrUnsafe (the socket's own
// mode is only a second fence). A path longer than the kernel allows for a
// Unix socket is refused with ErrPathTooLong. A socket left at path by a
// daemon that died is removed, after a connect proves nobody answers on it;
// a socket that answers is refused with ErrInUse, and a path that exists and
// is not a socket with ErrUnsafe. The socket is made mode 0600 before Listen
// returns.
//
// Two daemons racing on the same stale socket are not told apart here: the
// state directory's lock is what keeps a second daemon out.
func Listen(path string, logf func(format string, args ...any)) (*Listener, error) {
	if path == "" {
		return nil, refuse(ErrUnsafe, "no control socket path given; set --socket or HERMES_SOCKET")
	}
	if len(path) > maxSocketPath {
		return nil, tooLong(path)
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	dir := filepath.Dir(path)
	if err := secureDir(dir); err != nil {
		return nil, err
	}
	if err := clearStale(path); err != nil {
		return nil, err
	}
	ln, id, err := bind(path)
	if err != nil {
		return nil, err
	}
	l := &Listener{path: path, logf: logf, ln: ln, id: id, stop: make(chan struct{}), done: make(chan struct{})}
	w, err := fsnotify.NewWatcher()
	if err == nil {
		if err = w.Add(dir); err != nil {
			w.Close()
		}
	}
	if err != nil {
		// Still a working socket; it just will not come back if removed.
		logf("control socket %s: cannot watch its directory (%v); a removed socket will not be re-created", path, err)
		close(l.done)
		return l, nil
	}
	l.w = w
	go l.watch()
	return l, nil
}

func tooLong(path string) error {
	return refuse(ErrPathTooLong, "control socket path %s is %d bytes, over the kernel's limit of %d for a Unix socket; choose a shorter --socket (or HERMES_SOCKET), such as $XDG_RUNTIME_DIR/hermes/hermesd.sock",
		path, len(path), maxSocketPath)
}

// bind listens at path (free by now), makes the socket mode 0600 and
// returns it with its identity. Go would remove the file when the listener
// is closed; Listener decides that itself.
func bind(path string) (*net.UnixListener, fileID, error) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fileID{}, fmt.Errorf("listen on control socket %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false)
	// Between bind and chmod the socket has the umask's mode; the 0700
	// directory keeps everyone else out during that window.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		os.Remove(path)
		return nil, fileID{}, fmt.Errorf("control socket %s: %w", path, err)
	}
	id, err := identify(path)
	if err != nil {
		ln.Close()
		os.Remove(path)
		return nil, fileID{}, fmt.Errorf("control socket %s: %w", path, err)
	}
	return ln, id, nil
}

func identify(path string) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return fileID{}, err
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, nil // widths differ by platform
}

// Accept waits for the next connection on the socket in use, moving on to a
// re-created one when the old is replaced.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		l.mu.Lock()
		ln, closed := l.ln, l.closed
		l.mu.Unlock()
		if closed {
			return nil, net.ErrClosed
		}
		c, err := ln.Accept()
		if err == nil {
			return c, nil
		}
		l.mu.Lock()
		replaced := l.ln != ln && !l.closed
		l.mu.Unlock()
		if !replaced {
			return nil, err
		}
	}
}

// Addr is the socket's address.
func (l *Listener) Addr() net.Addr {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ln.Addr()
}

// Close stops listening and removes the socket file if it is still the one
// this Listener bound. Idempotent.
func (l *Listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	ln, id := l.ln, l.id
	l.mu.Unlock()
	l.Unwatch()
	err := ln.Close()
	// A successor could bind between this check and the unlink only if it
	// found the path free or stale, which it is not while ours is there.
	if now, ierr := identify(l.path); ierr == nil && now == id {
		if rerr := os.Remove(l.path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
			err = fmt.Errorf("remove control socket: %w", rerr)
		}
	}
	return err
}

// Unwatch ends the watch that binds the socket again when its name goes
// away; the socket keeps serving until Close, which calls Unwatch. It
// returns once the watch is torn down. The kernel takes a grace period,
// often 10 to 20 ms, to tear down the inotify instance: hermesd unwatches
// as its clean stop begins, so that this passes beside the units' stop.
func (l *Listener) Unwatch() {
	l.unwatch.Do(func() { close(l.stop) })
	<-l.done
}

// watch re-creates the socket when its name goes away, and the directory
// with it, until Unwatch.
func (l *Listener) watch() {
	defer close(l.done)
	defer l.w.Close()
	dir, base := filepath.Dir(l.path), filepath.Base(l.path)
	for {
		select {
		case <-l.stop:
			return
		case ev, ok := <-l.w.Events:
			if !ok {
				return
			}
			switch {
			case ev.Name == dir && (ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)):
				// The directory went: its watch with it. Create both again.
				l.restore(true)
			case filepath.Base(ev.Name) == base && (ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)):
				l.restore(false)
			}
		case err, ok := <-l.w.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				l.restore(false) // events were lost: look
			}
		}
	}
}

// restore binds the path again if our socket is no longer there and the
// path is free or stale; with dir it first creates the directory (checked
// as at Listen) and watches it again.
func (l *Listener) restore(dir bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	if now, err := identify(l.path); err == nil && now == l.id {
		return // still ours (an event about an older file of that name)
	}
	if _, err := os.Stat(filepath.Dir(l.path)); errors.Is(err, fs.ErrNotExist) {
		dir = true // its event may come later, or not at all (the watch went with it)
	}
	if dir {
		if err := secureDir(filepath.Dir(l.path)); err != nil {
			l.logf("control socket %s: its directory was removed and cannot be created again: %v", l.path, err)
			return
		}
		if err := l.w.Add(filepath.Dir(l.path)); err != nil {
			l.logf("control socket %s: cannot watch its directory again (%v); a removed socket will not be re-created", l.path, err)
		}
	}
	if err := clearStale(l.path); err != nil {
		l.logf("control socket %s was removed; not binding it again: %v", l.path, err)
		return
	}
	ln, id, err := bind(l.path)
	if err != nil {
		l.logf("control socket %s was removed; binding it again failed: %v", l.path, err)
		return
	}
	old := l.ln
	l.ln, l.id = ln, id
	old.Close() // its Accept returns, and moves on to ln
	l.logf("control socket %s was removed; re-created it", l.path)
}

// secureDir creates dir 0700 if missing and checks an existing one.
func secureDir(dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create control socket directory: %w", err)
		}
		// MkdirAll's mode passes through the umask; make it exact.
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("control socket directory: %w", err)
		}
		fi, err = os.Stat(dir)
	}
	if err != nil {
		return fmt.Errorf("control socket directory: %w", err)
	}
	if !fi.IsDir() {
		return refuse(ErrUnsafe, "control socket directory %s is not a directory; choose another --socket", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if euid := os.Geteuid(); int(st.Uid) != euid {
			return refuse(ErrUnsafe, "control socket directory %s is owned by uid %d, not by uid %d that runs hermesd; choose a directory of your own with --socket",
				dir, st.Uid, euid)
		}
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return refuse(ErrUnsafe, "control socket directory %s has mode %04o, want 0700 (other users could reach the socket); fix it with: chmod 700 %s",
			dir, perm, dir)
	}
	return nil
}

// clearStale removes a socket at path that nobody answers on.
func clearStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("control socket %s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return refuse(ErrUnsafe, "%s exists and is not a socket; move it away or choose another --socket", path)
	}
	c, err := net.DialTimeout("unix", path, staleProbe)
	if err == nil {
		c.Close()
		return refuse(ErrInUse, "another hermesd is serving %s; stop it first or choose another --socket", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("control socket %s exists and a connect to it failed (%w); not removing it", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale control socket: %w", err)
	}
	return nil
}

// refusal is an error whose message stands alone and which matches kind.
type refusal struct {
	msg  string
	kind error
}

func refuse(kind error, format string, args ...any) error {
	return &refusal{msg: fmt.Sprintf(format, args...), kind: kind}
}

func (r *refusal) Error() string { return r.msg }
func (r *refusal) Unwrap() error { return r.kind }
