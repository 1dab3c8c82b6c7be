package notify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// serveDir starts Sockets in a fresh directory and returns its messages;
// Run is stopped and joined at the end of the test.
func serveDir(t *testing.T) (*Sockets, <-chan Message) {
	t.Helper()
	s, err := ListenDir(filepath.Join(t.TempDir(), "notify"))
	if err != nil {
		t.Fatalf("ListenDir: %v", err)
	}
	return s, runUntilCleanup(t, s)
}

// runUntilCleanup runs r (a Server or Sockets) and returns what it
// delivers; Run is stopped and joined at the end of the test, and must
// return nil then.
func runUntilCleanup(t *testing.T, r interface {
	Run(context.Context, func(Message)) error
}) <-chan Message {
	msgs := make(chan Message, 16)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		errc <- r.Run(ctx, func(m Message) {
			select {
			case msgs <- m:
			case <-ctx.Done():
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Run returned %v after cancel, want nil", err)
		}
	})
	return msgs
}

func openSocket(t *testing.T, s *Sockets) string {
	t.Helper()
	path, err := s.Open()
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return path
}

func dial(t *testing.T, path string) *net.UnixConn {
	t.Helper()
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Two units' processes send READY=1 with go-systemd, each to the socket
// it was given: each message names the socket it came on, and on Linux
// its sender too.
func TestSocketsFromChild(t *testing.T) {
	s, msgs := serveDir(t)
	a, b := openSocket(t, s), openSocket(t, s) // b opened while Run may already run
	if a == b {
		t.Fatalf("Open returned %s twice", a)
	}
	for _, path := range []string{a, b} {
		cmd := helper(t, path, "READY=1\nSTATUS=up on "+filepath.Base(path))
		if err := cmd.Run(); err != nil {
			t.Fatalf("helper: %v", err)
		}
		m := receive(t, msgs)
		if m.Socket != path {
			t.Errorf("Socket = %q, want %q", m.Socket, path)
		}
		if st := m.Fields[FieldStatus]; !m.Ready() || st != "up on "+filepath.Base(path) {
			t.Errorf("Ready, Status = %v, %q; want true, %q", m.Ready(), st, "up on "+filepath.Base(path))
		}
		if want := cmd.Process.Pid; haveCredentials && m.PID != want {
			t.Errorf("PID = %d, want the sender's %d", m.PID, want)
		}
		if !haveCredentials && m.PID != 0 {
			t.Errorf("PID = %d without credentials, want 0", m.PID)
		}
	}
}

func TestSocketsPermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "notify")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := ListenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	path := openSocket(t, s)
	for p, want := range map[string]os.FileMode{dir: os.ModeDir | 0o700, path: os.ModeSocket | 0o600} {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode() &^ (os.ModeSticky | os.ModeSetgid); got != want {
			t.Errorf("%s: mode %v, want %v", p, got, want)
		}
	}
}

// A socket removed at the end of its run is gone, nobody can send to it,
// and its name is not given again.
func TestSocketsRemove(t *testing.T) {
	s, msgs := serveDir(t)
	old := openSocket(t, s)
	s.Remove(old)
	if _, err := os.Lstat(old); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after Remove: %v, want it gone", old, err)
	}
	if c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: old, Net: "unixgram"}); err == nil {
		c.Close()
		t.Errorf("dial %s after Remove succeeded, want an error", old)
	}
	s.Remove(old) // twice: ignored
	next := openSocket(t, s)
	if next == old {
		t.Errorf("Open after Remove returned the removed path %s again", old)
	}
	if _, err := dial(t, next).Write([]byte("READY=1")); err != nil {
		t.Fatal(err)
	}
	if m := receive(t, msgs); m.Socket != next || !m.Ready() {
		t.Errorf("got %q on %q, want READY=1 on %q", m.Raw, m.Socket, next)
	}
}

// Garbage, an oversized datagram and passed descriptors do not stop a
// socket: garbage parses to nothing, the oversized one is dropped, the
// descriptors are closed, and the next message arrives.
func TestSocketsHostile(t *testing.T) {
	s, msgs := serveDir(t)
	path := openSocket(t, s)
	c := dial(t, path)
	if _, err := c.Write([]byte("\x00\xff garbage\n=\nready=1")); err != nil {
		t.Fatal(err)
	}
	if m := receive(t, msgs); len(m.Fields) != 0 || m.Socket != path {
		t.Errorf("garbage: Fields %v on %q, want none on %q", m.Fields, m.Socket, path)
	}
	c.SetWriteBuffer(4 * maxDatagram)
	if _, err := c.Write([]byte("READY=1\n" + strings.Repeat("x", 2*maxDatagram))); err != nil {
		t.Logf("the kernel refused the oversized datagram itself: %v", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := sendRights(c, "STATUS=with a descriptor", int(w.Fd())); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if m := receive(t, msgs); m.Ready() || m.Fields[FieldStatus] != "with a descriptor" {
		t.Errorf("after the oversized datagram: got %q, want it dropped and the STATUS= next", m.Raw)
	}
	// Our end is closed; EOF comes once the server closed the copy it got.
	done := make(chan error, 1)
	go func() { _, err := io.ReadAll(r); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("read the pipe: %v", err)
		}
	case <-time.After(patience):
		t.Fatalf("the passed descriptor is still open after %v: the server kept it", patience)
	}
}

// sendRights sends msg with fd passed along (SCM_RIGHTS) on the connected c.
func sendRights(c *net.UnixConn, msg string, fd int) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Write(func(s uintptr) bool {
		serr = unix.Sendmsg(int(s), []byte(msg), unix.UnixRights(fd), nil, 0)
		return serr != unix.EAGAIN
	}); err != nil {
		return err
	}
	return serr
}

// A unit flooding its socket does not keep another unit's message out.
func TestSocketsFlood(t *testing.T) {
	s, msgs := serveDir(t)
	loud, quiet := openSocket(t, s), openSocket(t, s)
	c := dial(t, loud)
	ctx, cancel := context.WithCancel(t.Context())
	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		for i := 0; ctx.Err() == nil; i++ {
			c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			c.Write([]byte(fmt.Sprintf("STATUS=%d", i)))
		}
	}()
	defer func() { cancel(); <-flooded }()
	if _, err := dial(t, quiet).Write([]byte("READY=1")); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(patience)
	for n := 0; ; n++ {
		select {
		case m := <-msgs:
			if m.Socket == quiet {
				if !maps.Equal(m.Fields, map[string]string{FieldReady: "1"}) {
					t.Errorf("quiet socket: Fields %v, want READY=1", m.Fields)
				}
				t.Logf("the quiet unit's message came after %d of the loud one's", n)
				return
			}
		case <-deadline:
			t.Fatalf("the quiet unit's READY=1 did not arrive within %v of a flood", patience)
		}
	}
}

func TestListenDir(t *testing.T) {
	t.Run("path too long", func(t *testing.T) {
		limit := len(unix.RawSockaddrUnix{}.Path) - 1
		base := t.TempDir()
		dir := filepath.Join(base, strings.Repeat("d", limit-maxName-len(base)-1))
		if s, err := ListenDir(dir); !errors.Is(err, ErrPathTooLong) {
			if err == nil {
				s.Close()
			}
			t.Fatalf("ListenDir(%d-byte dir): got %v, want ErrPathTooLong", len(dir), err)
		}
		fits := dir[:len(dir)-1]
		s, err := ListenDir(fits)
		if err != nil {
			t.Fatalf("ListenDir(%d-byte dir): %v, want it to fit", len(fits), err)
		}
		defer s.Close()
		s.mu.Lock()
		s.next = maxSockets - 1 // the longest name
		s.mu.Unlock()
		path := openSocket(t, s)
		t.Logf("%d-byte socket path %s", len(path), path)
		if p, err := s.Open(); err == nil {
			t.Errorf("Open past maxSockets = %s, want an error", p)
		}
	})
	t.Run("link refused", func(t *testing.T) {
		base := t.TempDir()
		target := filepath.Join(base, "elsewhere")
		os.Mkdir(target, 0o700)
		link := filepath.Join(base, "notify")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		if s, err := ListenDir(link); err == nil {
			s.Close()
			t.Fatalf("ListenDir over a link succeeded, want an error")
		}
	})
	t.Run("stale sockets removed, files kept", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "notify")
		os.Mkdir(dir, 0o700)
		stale := filepath.Join(dir, "0.sock")
		old, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: stale, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		old.Close()
		other := filepath.Join(dir, "keep")
		os.WriteFile(other, nil, 0o600)
		s, err := ListenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := os.Lstat(stale); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("stale socket: %v, want it removed", err)
		}
		if _, err := os.Lstat(other); err != nil {
			t.Errorf("regular file: %v, want it kept", err)
		}
	})
	t.Run("Run ends: sockets gone, Open refused", func(t *testing.T) {
		s, err := ListenDir(filepath.Join(t.TempDir(), "notify"))
		if err != nil {
			t.Fatal(err)
		}
		path := openSocket(t, s)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := s.Run(ctx, func(Message) {}); err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
		if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after Run: %v, want it removed", path, err)
		}
		if p, err := s.Open(); !errors.Is(err, ErrClosed) {
			t.Errorf("Open after Run = %q, %v; want ErrClosed", p, err)
		}
		if err := s.Run(t.Context(), func(Message) {}); !errors.Is(err, ErrClosed) {
			t.Errorf("second Run = %v, want ErrClosed", err)
		}
	})
	t.Run("Close during Run", func(t *testing.T) {
		s, err := ListenDir(filepath.Join(t.TempDir(), "notify"))
		if err != nil {
			t.Fatal(err)
		}
		errc := make(chan error, 1)
		go func() { errc <- s.Run(t.Context(), func(Message) {}) }()
		s.Close()
		if err := <-errc; !errors.Is(err, ErrClosed) {
			t.Errorf("Run after Close = %v, want ErrClosed", err)
		}
	})
}

func TestParseMode(t *testing.T) {
	tests := []struct {
		in      string
		want    Mode
		wantErr error
	}{
		{"", defaultMode, nil},
		{"shared", ModeShared, nil},
		{"unit", ModeUnit, nil},
		{"Unit", "", ErrMode},
		{"per-unit", "", ErrMode},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseMode(tt.in)
			if got != tt.want || !errors.Is(err, tt.wantErr) {
				t.Errorf("ParseMode(%q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.wantErr)
			}
			if err == nil && tt.in != "" {
				if again, _ := ParseMode(string(got)); again != got {
					t.Errorf("round trip: %q, want %q", again, got)
				}
			}
		})
	}
}
