// Package notify serves a NOTIFY_SOCKET, so that programs written for
// systemd's Type=notify (sd_notify(3), systemd-notify(1), go-systemd's
// daemon.SdNotify) work unmodified under hermesd.
//
// The socket is a unixgram socket with SO_PASSCRED set: the kernel attaches
// the sender's pid, uid and gid to every datagram, so the daemon can map a
// message to the unit the sender belongs to. Any process of the unit may
// send (systemd-notify sends from its own pid, or as root from its
// parent's); the pid is only a lookup key, checked by the caller on evidence
// the sender cannot forge (its cgroup, or the session its unit leads), never
// its process group alone, which another unit's process could join.
//
// The sender's credentials on a datagram are Linux's (SCM_CREDENTIALS).
// darwin has none for a datagram socket (LOCAL_PEERCRED is for a connected
// stream), and FreeBSD's SCM_CREDS carries a pid only when the sender adds
// it, which sd_notify does not: there Listen fails with an error that
// errors.Is(err, errors.ErrUnsupported) matches.
//
// The per-unit mode (ModeUnit: ListenDir, Sockets) needs no credentials: each
// unit run gets a socket of its own in a private directory, and a message is
// the unit's whose socket it arrived on. It is the only mode off Linux, and
// can be chosen on Linux (ModeEnv), where the credentials still come with
// every message for the caller to check.
package notify

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Message is one datagram received on the socket.
type Message struct {
	PID, UID, GID int               // the sender, from SCM_CREDENTIALS; 0 where there are none (per-unit sockets off Linux)
	Socket        string            // the per-unit socket it arrived on (Sockets); "" on a shared Server
	Fields        map[string]string // KEY=VALUE lines; the last of a repeated key wins
	Raw           string            // the datagram as received
}

// Well-known fields (sd_notify(3)).
const (
	FieldReady  = "READY"
	FieldStatus = "STATUS"
)

// Ready reports READY=1: the service finished starting up.
func (m Message) Ready() bool { return m.Fields[FieldReady] == "1" }

// ParseFields parses a notification datagram: newline-separated KEY=VALUE
// assignments. Keys are non-empty and made of A-Z, 0-9 and '_'; lines that
// are not such an assignment (empty, no '=', a bad key, a NUL byte) are
// ignored. The last of a repeated key wins.
func ParseFields(raw string) map[string]string {
	fields := make(map[string]string)
	for line := range strings.SplitSeq(raw, "\n") {
		key, value, ok := strings.Cut(line, "=")
		if !ok || !validKey(key) || strings.IndexByte(value, 0) >= 0 {
			continue
		}
		fields[key] = value
	}
	return fields
}

func validKey(k string) bool {
	return k != "" && strings.Trim(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == ""
}

// maxDatagram bounds a message; systemd itself accepts at most 4 KiB, so
// larger datagrams are dropped as truncated.
const maxDatagram = 64 << 10

// ErrClosed reports that Run was called on a closed Server.
var ErrClosed = errors.New("notify socket closed")

// Server is a listening NOTIFY_SOCKET. Listen creates it; Run serves it
// until ctx ends; Close releases it when Run is never called.
type Server struct {
	path string
	conn *net.UnixConn

	closeOnce sync.Once
	closeErr  error
}

// Listen binds a NOTIFY_SOCKET at path (mode 0600, parent directories created
// with mode 0700). A stale socket left at path by an earlier run is removed
// first; any other kind of file there is an error. A path starting with '@'
// names a socket in the abstract namespace, which has no file.
func Listen(path string) (*Server, error) {
	if path == "" {
		return nil, errors.New("listen notify socket: empty path")
	}
	// sun_path holds 108 bytes with the terminating NUL.
	if len(path) >= len(unix.RawSockaddrUnix{}.Path) {
		return nil, fmt.Errorf("listen notify socket %s: the path is %d bytes, the limit for a Unix socket is %d; choose a shorter state directory", path, len(path), len(unix.RawSockaddrUnix{}.Path)-1)
	}
	abstract := path[0] == '@'
	if !abstract {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("listen notify socket: %w", err)
		}
		if fi, err := os.Lstat(path); err == nil {
			if fi.Mode().Type() != fs.ModeSocket {
				return nil, fmt.Errorf("listen notify socket: %s exists and is not a socket; remove it or choose another path", path)
			}
			if err := os.Remove(path); err != nil {
				return nil, fmt.Errorf("listen notify socket: remove stale socket: %w", err)
			}
		}
	}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("listen notify socket: %w", err)
	}
	s := &Server{path: path, conn: conn}
	if err := s.setup(abstract); err != nil {
		s.Close()
		return nil, fmt.Errorf("listen notify socket %s: %w", path, err)
	}
	return s, nil
}

func (s *Server) setup(abstract bool) error {
	if !abstract {
		if err := os.Chmod(s.path, 0o600); err != nil {
			return err
		}
	}
	rc, err := s.conn.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = passCredentials(int(fd)) }); err != nil {
		return err
	}
	return serr
}

// Close closes the socket and removes its file. It is safe to call more than
// once and concurrently with Run, which then returns ErrClosed.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = s.conn.Close()
		if s.path[0] != '@' {
			if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) && s.closeErr == nil {
				s.closeErr = err
			}
		}
	})
	return s.closeErr
}

// Run receives datagrams and calls deliver, on Run's goroutine and in the
// order they arrived, for each one that carries the sender's credentials;
// datagrams without credentials or truncated ones are dropped, and file
// descriptors passed along (FDSTORE) are closed. deliver must not block for
// long: the kernel queue behind it is bounded and senders then block or fail.
//
// Run returns nil once ctx ends, after closing the socket and removing its
// file; ErrClosed if the Server was closed by Close; another error if
// receiving failed (the socket is closed then too). A Server is run once.
// Messages from any uid are delivered: the socket's mode 0600 limits who
// can send, and the caller maps PID to a unit's group.
func (s *Server) Run(ctx context.Context, deliver func(Message)) error {
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()

	buf := make([]byte, maxDatagram)
	oob := make([]byte, oobSize)
	for {
		n, oobn, flags, _, err := s.conn.ReadMsgUnix(buf, oob)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return ErrClosed
			}
			return fmt.Errorf("receive on notify socket %s: %w", s.path, err)
		}
		m, ok := credentials(oob[:oobn])
		if !ok || flags&unix.MSG_TRUNC != 0 {
			continue
		}
		m.Raw = string(buf[:n])
		m.Fields = ParseFields(m.Raw)
		deliver(m)
	}
}
