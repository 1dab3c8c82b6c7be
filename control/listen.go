package control

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// staleProbe bounds the connect that tells a stale socket from a live one.
// A live daemon accepts at once (the kernel completes the connect from the
// backlog), so the bound only matters for a daemon that is wedged.
const staleProbe = 2 * time.Second

// Listen prepares path for the control socket and listens on it.
//
// The directory is created with mode 0700 if it is missing; if it exists it
// must be a directory owned by the current effective uid with no group or
// other permission bits, or Listen refuses with ErrUnsafe (the socket's own
// mode is only a second fence). A socket left at path by a daemon that died is
// removed, after a connect proves nobody answers on it; a socket that answers
// is refused with ErrInUse, and a path that exists and is not a socket with
// ErrUnsafe. The socket is made mode 0600 before Listen returns; closing the
// listener removes it.
//
// Two daemons racing on the same stale socket are not told apart here: the
// state directory's lock is what keeps a second daemon out.
func Listen(path string) (net.Listener, error) {
	if path == "" {
		return nil, refuse(ErrUnsafe, "no control socket path given; set --socket or HERMES_SOCKET")
	}
	dir := filepath.Dir(path)
	if err := secureDir(dir); err != nil {
		return nil, err
	}
	if err := clearStale(path); err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on control socket %s: %w", path, err)
	}
	// Between bind and chmod the socket has the umask's mode; the 0700
	// directory keeps everyone else out during that window.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	return ln, nil
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
