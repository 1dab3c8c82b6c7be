package control

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/hermes-units/hermes/internal/testkit"
)

// The test binary is its own helper: with envHelper set it acts as a
// hermesctl that asks the daemon at envSocket for its status, and reports
// through its exit code (0 admitted, 3 denied, 1 anything else).
const (
	envHelper  = "HERMES_CONTROL_TEST_HELPER"
	envSocket  = "HERMES_CONTROL_TEST_SOCKET"
	exitDenied = 3
)

func TestMain(m *testing.M) {
	if os.Getenv(envHelper) == "status" {
		os.Exit(helperStatus(os.Getenv(envSocket)))
	}
	goleak.VerifyTestMain(m)
}

func helperStatus(socket string) int {
	c, err := Dial(socket)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Close()
	_, err = c.Status(context.Background())
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrDenied):
		fmt.Fprintln(os.Stderr, err)
		return exitDenied
	}
	fmt.Fprintln(os.Stderr, err)
	return 1
}

// fakeBackend records calls and answers from its fields.
type fakeBackend struct {
	status Status
	plan   Plan
	logs   map[string]string
	err    error                                        // returned by every method when set
	stop   func(ctx context.Context, unit string) error // replaces Stop when set
	calls  testkit.Lines                                // a line a call
}

func (b *fakeBackend) Status(_ context.Context, units ...string) (Status, error) {
	b.calls.Logf("status %v", units)
	return b.status, b.err
}

func (b *fakeBackend) Start(_ context.Context, unit string) error {
	b.calls.Logf("start %s", unit)
	return b.err
}

func (b *fakeBackend) Stop(ctx context.Context, unit string) error {
	b.calls.Logf("stop %s", unit)
	if b.stop != nil {
		return b.stop(ctx, unit)
	}
	return b.err
}

func (b *fakeBackend) Restart(_ context.Context, unit string) error {
	b.calls.Logf("restart %s", unit)
	return b.err
}

func (b *fakeBackend) Reload(_ context.Context, dryRun bool) (Plan, error) {
	b.calls.Logf("reload dry_run=%v", dryRun)
	return b.plan, b.err
}

func (b *fakeBackend) LogPath(_ context.Context, unit string) (string, error) {
	b.calls.Logf("log %s", unit)
	if b.err != nil {
		return "", b.err
	}
	p, ok := b.logs[unit]
	if !ok {
		return "", fmt.Errorf("%w %q", ErrUnknownUnit, unit)
	}
	return p, nil
}

// served is a Server running on a socket in a fresh directory.
type served struct {
	path   string
	client *Client
	cancel context.CancelFunc
	done   chan error
}

// serve runs srv on a new socket until the test ends (or stopServing).
func serve(t *testing.T, srv *Server) *served {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run", "hermesd.sock")
	ln, err := Listen(path, nil)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	return serveListener(t, srv, ln, path)
}

// serveListener runs srv on ln, the listener of the socket at path.
func serveListener(t *testing.T, srv *Server, ln net.Listener, path string) *served {
	t.Helper()
	// Not t.Context: it ends before Cleanup runs, and the cleanup below
	// wants to be the one that stops the server.
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{path: path, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- srv.Serve(ctx, ln) }()
	c, err := Dial(path)
	if err != nil {
		cancel()
		<-s.done
		t.Fatalf("Dial: %v", err)
	}
	s.client = c
	t.Cleanup(func() {
		c.Close()
		if err := s.stopServing(); err != nil {
			t.Errorf("Serve returned %v, want nil", err)
		}
	})
	return s
}

// stopServing ends Serve and waits for it; safe to call twice.
func (s *served) stopServing() error {
	s.cancel()
	err, ok := <-s.done
	if ok {
		close(s.done)
	}
	return err
}

func (b *fakeBackend) Adopt(_ context.Context, req AdoptRequest) (Adopted, error) {
	b.calls.Logf("adopt pid=%d pgid=%d as=%s caller_pgid=%d", req.PID, req.PGID, req.As, req.CallerPGID)
	if b.err != nil {
		return Adopted{}, b.err
	}
	return Adopted{Unit: req.As, PGID: req.PGID, PID: req.PID}, nil
}

func (b *fakeBackend) Orphans(_ context.Context, req OrphansRequest) (OrphanReport, error) {
	b.calls.Logf("orphans adopt=%v", req.Adopt)
	return OrphanReport{}, b.err
}

func (b *fakeBackend) Release(_ context.Context, unit string) (Released, error) {
	b.calls.Logf("release %s", unit)
	return Released{Unit: unit}, b.err
}
