package testkit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/internal/notify"
)

// Daemon is a process started by StartReady.
type Daemon struct {
	Cmd *exec.Cmd
	// Done receives Wait's result once, when the process has exited and
	// been reaped; whoever takes it puts it back if others may wait too.
	Done chan error
}

// StartReady starts cmd with NOTIFY_SOCKET naming a socket it serves, and
// returns once the process has sent READY=1 (sd_notify(3)): a handshake,
// no polling. It fails when the process exits first or sends nothing
// within d; log, the file the process writes its output to ("" for none),
// is then quoted in the error. The socket is served until READY=1 only.
//
// ctx ending stops the wait for READY=1 (the error is then ctx's).
// The Daemon is returned whenever cmd started, error or not: the caller
// stops it (Stop, or a signal and <-Done). With an error from an early
// exit, Done still holds that exit's result.
func StartReady(ctx context.Context, cmd *exec.Cmd, d time.Duration, log string) (*Daemon, error) {
	// Not under t.TempDir(): its path may exceed a socket address's 108 bytes.
	dir, err := os.MkdirTemp("", "testkit-notify")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "n.sock")
	ns, err := notify.Listen(sock)
	if err != nil {
		return nil, err
	}
	defer ns.Close()
	ctx, cancel := context.WithCancel(ctx)
	ready := make(chan struct{}, 1)
	served := make(chan error, 1)
	go func() {
		served <- ns.Run(ctx, func(m notify.Message) {
			if m.Ready() {
				select {
				case ready <- struct{}{}:
				default:
				}
			}
		})
	}()
	defer func() { cancel(); <-served }()

	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, "NOTIFY_SOCKET="+sock)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Daemon{Cmd: cmd, Done: make(chan error, 1)}
	go func() { p.Done <- cmd.Wait() }()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ready:
		return p, nil
	case err := <-p.Done:
		p.Done <- err
		return p, fmt.Errorf("%s exited before READY=1: %v%s", cmd.Path, err, quote(log))
	case <-timer.C:
		return p, fmt.Errorf("%s sent no READY=1 within %v%s", cmd.Path, d, quote(log))
	case <-ctx.Done():
		return p, ctx.Err()
	}
}

// Stop stops the process with SIGTERM and waits for it; after grace, it
// kills it (SIGKILL) and says so. It returns the exit's error otherwise.
// Stop takes Done's value: call it once, and not after taking Done.
func (p *Daemon) Stop(grace time.Duration) error {
	p.Cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case err := <-p.Done:
		return err
	case <-timer.C:
		p.Cmd.Process.Kill()
		<-p.Done
		return fmt.Errorf("%s did not stop within %v of SIGTERM; killed", p.Cmd.Path, grace)
	}
}

// quote is log's content as the tail of an error, "" when there is none.
func quote(log string) string {
	if log == "" {
		return ""
	}
	b, _ := os.ReadFile(log)
	return fmt.Sprintf("; %s:\n%s", log, b)
}
