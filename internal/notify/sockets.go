package notify

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Per-unit sockets (ModeUnit). Each unit run that listens for sd_notify is
// given a datagram socket of its own, in a directory of mode 0700 that only
// hermesd's user can enter, and a message is attributed by the socket it
// arrives on: no credentials are needed, so this works wherever Unix
// datagram sockets do. Socket names are short (a base-36 counter), so a
// state directory close to the sun_path limit (104 bytes on darwin and the
// BSDs, 108 on Linux) still fits; one that does not is refused by
// ListenDir, before any unit starts. A name is never reused by a Sockets:
// a process left over from an earlier run cannot reach a later one.

// ErrPathTooLong reports a directory whose sockets' paths would not fit in
// a Unix socket address.
var ErrPathTooLong = errors.New("notify socket path too long")

// maxSockets bounds the sockets one Sockets opens (a billion runs and
// more), so that a name takes at most 6 base-36 digits: maxName is the
// longest name Open makes.
const (
	maxSockets = 36 * 36 * 36 * 36 * 36 * 36
	maxName    = 6 + len(".sock")
)

// readerQueue bounds the messages read from all sockets and not yet
// delivered; readers wait behind it, and the kernel's queue of each socket
// behind them, so a unit that floods its socket is slowed to the pace of
// deliver and delays other units' messages by at most this many.
const readerQueue = 16

// Sockets is a directory of per-unit NOTIFY_SOCKETs. ListenDir creates it;
// Open and Remove add and remove one socket (the reconciler, around each
// run); Run serves them all until ctx ends; Close releases them when Run is
// never called. Open and Remove may be called from any goroutine, before,
// during or after Run.
type Sockets struct {
	dir string

	mu      sync.Mutex
	next    uint64                   // guarded by mu: the name of the next socket
	open    map[string]*net.UnixConn // guarded by mu: path → socket
	serving *serving                 // guarded by mu: set while Run runs
	closed  bool                     // guarded by mu: Run ended or Close was called

	stop     chan struct{} // closed by the first Close
	stopOnce sync.Once
}

// serving is what the readers of one Run share.
type serving struct {
	msgs chan Message
	done chan struct{} // closed when Run stops delivering
	wg   sync.WaitGroup
}

// ListenDir prepares dir for per-unit sockets: it is created with mode
// 0700 (an existing one is set to 0700; a link or a file there is an
// error), and sockets an earlier run left in it are removed. The error
// matches ErrPathTooLong when a socket's path in dir would not fit in a
// Unix socket address: choose a shorter state directory then.
func ListenDir(dir string) (*Sockets, error) {
	if limit := len(unix.RawSockaddrUnix{}.Path) - 1; len(dir)+1+maxName > limit {
		return nil, fmt.Errorf("listen notify sockets in %s: %w: the directory's path is %d bytes, a socket in it would need up to %d, the limit for a Unix socket is %d; choose a shorter state directory", dir, ErrPathTooLong, len(dir), len(dir)+1+maxName, limit)
	}
	if err := privateDir(dir); err != nil {
		return nil, fmt.Errorf("listen notify sockets in %s: %w", dir, err)
	}
	return &Sockets{dir: dir, open: make(map[string]*net.UnixConn), stop: make(chan struct{})}, nil
}

// privateDir makes dir a directory of mode 0700 holding no socket.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (%v); remove it", dir, fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, not to this user (%d); remove it", dir, st.Uid, os.Geteuid())
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Type() == fs.ModeSocket {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove stale socket: %w", err)
			}
		}
	}
	return nil
}

// Dir returns the directory of the sockets.
func (s *Sockets) Dir() string { return s.dir }

// Open creates a new socket (mode 0600) and returns its path, to put in
// one unit run's NOTIFY_SOCKET; messages on it carry the path in
// Message.Socket. The caller calls Remove with the path when the run ends.
// After Run has returned or Close was called, Open fails with ErrClosed.
func (s *Sockets) Open() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", ErrClosed
	}
	if s.next >= maxSockets {
		return "", fmt.Errorf("open notify socket in %s: %d sockets opened, the most one hermesd names; restart hermesd", s.dir, s.next)
	}
	path := filepath.Join(s.dir, strconv.FormatUint(s.next, 36)+".sock")
	s.next++
	conn, err := listenUnit(path)
	if err != nil {
		return "", fmt.Errorf("open notify socket %s: %w", path, err)
	}
	s.open[path] = conn
	if s.serving != nil {
		s.startLocked(path, conn)
	}
	return path, nil
}

// listenUnit binds a unit's socket at path: mode 0600, and on Linux with
// SO_PASSCRED, so that the sender can be checked against the unit.
func listenUnit(path string) (*net.UnixConn, error) {
	os.Remove(path) // a socket file left by a crashed hermesd; the directory is ours
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil, err
	}
	err = os.Chmod(path, 0o600)
	if err == nil && haveCredentials {
		var rc syscall.RawConn
		if rc, err = conn.SyscallConn(); err == nil {
			var serr error
			if err = rc.Control(func(fd uintptr) { serr = passCredentials(int(fd)) }); err == nil {
				err = serr
			}
		}
	}
	if err != nil {
		conn.Close()
		os.Remove(path)
		return nil, err
	}
	return conn, nil
}

// Remove closes the socket at path and removes its file; a message read
// from it but not yet delivered may still be delivered after. An unknown
// path is ignored.
func (s *Sockets) Remove(path string) {
	s.mu.Lock()
	conn := s.open[path]
	delete(s.open, path)
	s.mu.Unlock()
	if conn != nil {
		conn.Close()
		os.Remove(path)
	}
}

// Close closes every socket and removes its file; Open fails after it. It
// is safe to call more than once and concurrently with Run, which then
// returns ErrClosed.
func (s *Sockets) Close() error {
	s.mu.Lock()
	s.closed = true
	open := s.open
	s.open = make(map[string]*net.UnixConn)
	s.mu.Unlock()
	s.stopOnce.Do(func() { close(s.stop) })
	for path, conn := range open {
		conn.Close()
		os.Remove(path)
	}
	return nil
}

// Run reads every socket, those open now and those opened later, and calls
// deliver on Run's goroutine for each datagram: in the order they arrived
// on one socket, in no set order across sockets. Truncated datagrams (over
// 64 KiB) are dropped; descriptors passed along are closed. On Linux the
// sender's credentials fill PID, UID and GID (the caller may check them
// against the unit); elsewhere they are 0. deliver must not block for long
// (see readerQueue).
//
// Run returns nil once ctx ends, after closing every socket, removing its
// file and joining its readers; ErrClosed if the Sockets was closed by
// Close (or Run was called before). A Sockets is run once.
func (s *Sockets) Run(ctx context.Context, deliver func(Message)) error {
	sv := &serving{msgs: make(chan Message, readerQueue), done: make(chan struct{})}
	s.mu.Lock()
	if s.closed || s.serving != nil {
		s.mu.Unlock()
		return ErrClosed
	}
	s.serving = sv
	for path, conn := range s.open {
		s.startLocked(path, conn)
	}
	s.mu.Unlock()
	defer func() {
		close(sv.done)
		s.Close()
		sv.wg.Wait()
	}()
	for {
		select {
		case m := <-sv.msgs:
			deliver(m)
		case <-ctx.Done():
			return nil
		case <-s.stop:
			return ErrClosed
		}
	}
}

// startLocked starts the reader of the socket at path, joined by Run.
func (s *Sockets) startLocked(path string, conn *net.UnixConn) {
	sv := s.serving
	sv.wg.Go(func() { readUnit(path, conn, sv) })
}

// readUnit hands the datagrams of one socket to Run until the socket is
// closed or Run stops. A receive error other than a closed socket (none is
// expected of a datagram socket) ends it too: the unit's messages are lost
// until its next run, which gets a new socket.
func readUnit(path string, conn *net.UnixConn, sv *serving) {
	buf := make([]byte, maxDatagram)
	oob := make([]byte, oobSize)
	for {
		n, oobn, flags, _, err := conn.ReadMsgUnix(buf, oob)
		if err != nil {
			return
		}
		m, _ := credentials(oob[:oobn]) // PID 0 where there are none
		if flags&unix.MSG_TRUNC != 0 {
			continue
		}
		m.Socket, m.Raw = path, string(buf[:n])
		m.Fields = ParseFields(m.Raw)
		select {
		case sv.msgs <- m:
		case <-sv.done:
			return
		}
	}
}
