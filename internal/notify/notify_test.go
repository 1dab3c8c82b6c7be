//go:build linux

package notify

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// serve starts a Server at path and returns its messages; the server is
// stopped and joined at the end of the test.
func serve(t *testing.T, path string) (*Server, <-chan Message) {
	t.Helper()
	s, err := Listen(path)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	return s, runUntilCleanup(t, s)
}

func TestSdNotifyFromChild(t *testing.T) {
	tests := []struct {
		name   string
		socket func(t *testing.T) string
	}{
		{"file", func(t *testing.T) string { return filepath.Join(t.TempDir(), "notify.sock") }},
		{"abstract", func(t *testing.T) string {
			return fmt.Sprintf("@hermes-notify-test-%d-%d", os.Getpid(), time.Now().UnixNano())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, msgs := serve(t, tt.socket(t))
			cmd := helper(t, s.path, "READY=1\nSTATUS=listening on :8080\nMAINPID=4242\nWATCHDOG=1")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			m := receive(t, msgs)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("helper: %v", err)
			}
			if m.PID != cmd.Process.Pid {
				t.Errorf("PID = %d, want the sender's %d", m.PID, cmd.Process.Pid)
			}
			if m.UID != os.Getuid() || m.GID != os.Getgid() {
				t.Errorf("UID, GID = %d, %d, want %d, %d", m.UID, m.GID, os.Getuid(), os.Getgid())
			}
			want := map[string]string{"READY": "1", "STATUS": "listening on :8080", "MAINPID": "4242", "WATCHDOG": "1"}
			if !m.Ready() || !maps.Equal(m.Fields, want) {
				t.Errorf("Ready, Fields = %v, %v, want true, %v", m.Ready(), m.Fields, want)
			}
			if m.Raw != "READY=1\nSTATUS=listening on :8080\nMAINPID=4242\nWATCHDOG=1" {
				t.Errorf("Raw = %q, want the datagram as sent", m.Raw)
			}
		})
	}
}

// systemd-notify sends from its own pid, or, when it may (as root), with
// its parent's pid in the credentials; both belong to the unit's group.
func TestSystemdNotify(t *testing.T) {
	bin, err := exec.LookPath("systemd-notify")
	if err != nil {
		t.Skip("systemd-notify is not installed on this machine; the go-systemd sender covers the protocol")
	}
	s, msgs := serve(t, filepath.Join(t.TempDir(), "notify.sock"))
	cmd := exec.Command(bin, "--ready", "--status=warming up")
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+s.path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-notify: %v: %s", err, out)
	}
	m := receive(t, msgs)
	t.Logf("systemd-notify %d, its parent %d, credentials %d", cmd.Process.Pid, os.Getpid(), m.PID)
	if m.PID != cmd.Process.Pid && m.PID != os.Getpid() {
		t.Errorf("PID = %d, want systemd-notify's %d or its parent's %d", m.PID, cmd.Process.Pid, os.Getpid())
	}
	if !m.Ready() {
		t.Errorf("Ready = false in %q, want true", m.Raw)
	}
	if st := m.Fields[FieldStatus]; st != "warming up" {
		t.Errorf("Status = %q, want %q", st, "warming up")
	}
}

// Garbage on the socket does not stop the server; what can be parsed of it
// is delivered, and later messages still arrive.
func TestGarbage(t *testing.T) {
	s, msgs := serve(t, filepath.Join(t.TempDir(), "notify.sock"))
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: s.path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, d := range []string{"\x00\xff\xfe garbage", "", "READY=1"} {
		if _, err := conn.Write([]byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []map[string]string{{}, {}, {"READY": "1"}} {
		m := receive(t, msgs)
		if !maps.Equal(m.Fields, want) {
			t.Errorf("Fields = %v, want %v (raw %q)", m.Fields, want, m.Raw)
		}
		if m.PID != os.Getpid() {
			t.Errorf("PID = %d, want %d", m.PID, os.Getpid())
		}
	}
}

func TestListen(t *testing.T) {
	t.Run("mode 0600 and removed after Run", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "run", "notify.sock")
		s, err := Listen(path)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
			t.Errorf("mode = %v, want a socket with 0600", fi.Mode())
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := s.Run(ctx, func(Message) {}); err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("socket file after Run: %v, want it removed", err)
		}
	})
	t.Run("stale socket replaced", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "notify.sock")
		old, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		old.Close() // a datagram socket leaves its file behind
		s, err := Listen(path)
		if err != nil {
			t.Fatalf("Listen over a stale socket: %v", err)
		}
		s.Close()
	})
	t.Run("other file kept", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "notify.sock")
		os.WriteFile(path, []byte("precious"), 0o600)
		if s, err := Listen(path); err == nil {
			s.Close()
			t.Fatal("Listen over a regular file succeeded, want an error")
		}
		if b, _ := os.ReadFile(path); string(b) != "precious" {
			t.Errorf("file content = %q, want it untouched", b)
		}
	})
	t.Run("path too long", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), strings.Repeat("d", 100), "notify.sock")
		if s, err := Listen(path); err == nil {
			s.Close()
			t.Fatalf("Listen(%d-byte path) succeeded, want an error", len(path))
		}
	})
	t.Run("Close without Run", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "notify.sock")
		s, err := Listen(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("Close = %v", err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("second Close = %v, want nil", err)
		}
		if err := s.Run(t.Context(), func(Message) {}); !errors.Is(err, ErrClosed) {
			t.Errorf("Run after Close = %v, want ErrClosed", err)
		}
	})
}

func TestParseFields(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want map[string]string
	}{
		{"ready", "READY=1", map[string]string{"READY": "1"}},
		{"several", "READY=1\nSTATUS=ok\nMAINPID=12", map[string]string{"READY": "1", "STATUS": "ok", "MAINPID": "12"}},
		{"trailing newline", "WATCHDOG=1\n", map[string]string{"WATCHDOG": "1"}},
		{"value with equals", "STATUS=a=b", map[string]string{"STATUS": "a=b"}},
		{"empty value", "STATUS=", map[string]string{"STATUS": ""}},
		{"last wins", "STATUS=one\nSTATUS=two", map[string]string{"STATUS": "two"}},
		{"no equals", "READY\nSTOPPING=1", map[string]string{"STOPPING": "1"}},
		{"empty key", "=1\nRELOADING=1", map[string]string{"RELOADING": "1"}},
		{"lower-case key", "ready=1", map[string]string{}},
		{"space in key", "READY =1", map[string]string{}},
		{"NUL in value", "STATUS=a\x00b\nERRNO=2", map[string]string{"ERRNO": "2"}},
		{"empty", "", map[string]string{}},
		{"binary", "\xff\xfe\x00", map[string]string{}},
		{"custom key", "X_HERMES_PHASE=2", map[string]string{"X_HERMES_PHASE": "2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseFields(tt.raw); !maps.Equal(got, tt.want) {
				t.Errorf("ParseFields(%q) = %v, want %v", tt.raw, got, tt.want)
			}
		})
	}
}

func FuzzParseFields(f *testing.F) {
	for _, s := range []string{"READY=1", "READY=1\nSTATUS=ok\n", "=\n==\n", "A=\x00", "MAINPID=1\nMAINPID=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		fields := ParseFields(raw)
		lines := strings.Split(raw, "\n")
		for k, v := range fields {
			if !validKey(k) {
				t.Errorf("key %q is not valid", k)
			}
			if strings.ContainsAny(v, "\n\x00") {
				t.Errorf("value %q of %s holds a newline or NUL", v, k)
			}
			if !slices.Contains(lines, k+"="+v) {
				t.Errorf("%s=%s is not a line of the input", k, v)
			}
		}
		// Serializing what was parsed and parsing it again is stable.
		var b strings.Builder
		for _, k := range slices.Sorted(maps.Keys(fields)) {
			b.WriteString(k + "=" + fields[k] + "\n")
		}
		if again := ParseFields(b.String()); !maps.Equal(again, fields) {
			t.Errorf("round trip: %v, want %v", again, fields)
		}
	})
}
