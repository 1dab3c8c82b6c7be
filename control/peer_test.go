package control

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/hermes-units/hermes/internal/testkit"
)

func TestAdmitted(t *testing.T) {
	for _, tc := range []struct {
		name      string
		uid, self int
		want      bool
	}{
		{"same user", 1000, 1000, true},
		{"root steers a user's daemon", 0, 1000, true},
		{"root's daemon", 0, 0, true},
		{"another user", 1001, 1000, false},
		{"a user at root's daemon", 1000, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := admitted(tc.uid, tc.self); got != tc.want {
				t.Errorf("admitted(%d, %d) = %v, want %v", tc.uid, tc.self, got, tc.want)
			}
		})
	}
}

// TestPeerUID connects from real processes running as other uids and checks
// the server's SO_PEERCRED verdict. The socket's and directory's modes are
// opened up for this test only, so that the peer check is the one fence
// left: otherwise the kernel would refuse the connect itself.
func TestPeerUID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the client as other uids; the verdict itself is covered by TestAdmitted")
	}
	bin := helperBinary(t)
	const nobody = 65534
	for _, tc := range []struct {
		name      string
		daemonUID int // the uid the server admits besides root
		clientUID int // -1: the test's own uid (root)
		want      bool
	}{
		{"other uid refused", 0, nobody, false},
		{"root admitted", 0, -1, true},
		{"same uid admitted", nobody, nobody, true},
		{"other non-root uid refused", nobody, nobody - 1, false},
		{"root admitted by a user's daemon", nobody, -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, err := os.MkdirTemp("", "ctlpeer")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(base) })
			path := filepath.Join(base, "run", "hermesd.sock")
			ln, err := Listen(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			for p, mode := range map[string]os.FileMode{base: 0o755, filepath.Dir(path): 0o755, path: 0o666} {
				if err := os.Chmod(p, mode); err != nil {
					ln.Close()
					t.Fatal(err)
				}
			}
			var logs testkit.Lines
			srv := NewServer(&fakeBackend{}, Options{Logf: logs.Logf})
			srv.uid = tc.daemonUID
			s := serveListener(t, srv, ln, path)

			cmd := exec.Command(bin, "-test.run=^$")
			cmd.Dir = "/"
			// GORACE: a race-enabled binary otherwise sleeps 1 s on a clean exit.
			cmd.Env = append(os.Environ(), envHelper+"=status", envSocket+"="+s.path, "GORACE=atexit_sleep_ms=0")
			if tc.clientUID >= 0 {
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(tc.clientUID), Gid: uint32(tc.clientUID)}}
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err = cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatalf("helper: %v", err)
			}
			switch {
			case tc.want && code != 0:
				t.Errorf("client uid %d refused by daemon uid %d (exit %d): %s", tc.clientUID, tc.daemonUID, code, stderr.Bytes())
			case !tc.want && code != exitDenied:
				t.Errorf("client uid %d: exit %d, want %d (denied): %s", tc.clientUID, code, exitDenied, stderr.Bytes())
			}
			// Stop the server so that every refusal has been logged.
			if err := s.stopServing(); err != nil {
				t.Errorf("Serve: %v", err)
			}
			logged := len(logs.Matching("uid "+strconv.Itoa(tc.clientUID))) > 0
			if logged == tc.want {
				t.Errorf("refusal logged = %v, want %v; log: %q", logged, !tc.want, logs.All())
			}
		})
	}
}

// helperBinary copies the test binary where another uid may run it: the go
// tool's build directory is private to the user that built it.
func helperBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "ctlbin")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	bin := filepath.Join(dir, "control.test")
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return bin
}
