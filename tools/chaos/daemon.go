package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/notify"
)

// envRun tags hermesd and, through its environment, every unit process of
// one harness run.
const envRun = "HERMES_CHAOS_RUN"

// daemon is one hermesd process of the run.
type daemon struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd.Wait returned
	err  error         // cmd.Wait's result, set before done closes
}

// alive reports whether the daemon has not exited yet.
func (d *daemon) alive() bool {
	select {
	case <-d.done:
		return false
	default:
		return true
	}
}

// exited waits at most dt for the daemon to exit.
func (d *daemon) exited(dt time.Duration) bool {
	select {
	case <-d.done:
		return true
	case <-time.After(dt):
		return false
	}
}

// build compiles hermesd with the chaos build tag (its SIGUSR2 panic hook)
// into dir.
func build(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	bin := filepath.Join(dir, "hermesd")
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "chaos", "-o", bin, "./cmd/hermesd")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build -tags chaos ./cmd/hermesd: %w\n%s", err, b)
	}
	return bin, nil
}

// start runs hermesd on the run's directories (into the harness's cgroup
// when there is one) and waits for its READY=1 on a NOTIFY_SOCKET the
// harness serves: a handshake, not a guess. hermesd says READY once every
// declared unit has had its first chance to start.
func (h *harness) start(ctx context.Context) (*daemon, error) {
	nsPath := filepath.Join(h.dir, "n.sock")
	os.Remove(nsPath)
	ns, err := notify.Listen(nsPath)
	if err != nil {
		return nil, err
	}
	nctx, cancel := context.WithCancel(ctx)
	ready := make(chan struct{}, 1)
	nsDone := make(chan struct{})
	go func() { // joined below
		defer close(nsDone)
		ns.Run(nctx, func(m notify.Message) {
			if m.Ready() {
				select {
				case ready <- struct{}{}:
				default:
				}
			}
		})
	}()
	defer func() { cancel(); <-nsDone }()

	logf, err := os.OpenFile(h.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "---- hermesd start (round %d)\n", h.round)
	cmd := exec.Command(h.bin, "--units", h.units, "--state", h.state, "--socket", h.socket,
		"--config", filepath.Join(h.dir, "none.yaml"), "--role", "gateway")
	cmd.Env = append(os.Environ(), envRun+"="+h.run, "NOTIFY_SOCKET="+nsPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	if h.cg != nil {
		fd, err := os.Open(h.cg.dir)
		if err != nil {
			return nil, err
		}
		defer fd.Close()
		if cmd.SysProcAttr, err = cgroupAttr(int(fd.Fd())); err != nil {
			return nil, err
		}
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	d := &daemon{cmd: cmd, done: make(chan struct{})}
	go func() { // joined by whoever waits on done
		d.err = cmd.Wait()
		close(d.done)
	}()
	select {
	case <-ready:
		return d, nil
	case <-d.done:
		return nil, fmt.Errorf("hermesd exited before READY=1: %v (log %s)", d.err, h.log)
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-d.done
		return nil, fmt.Errorf("hermesd sent no READY=1 within 30s (log %s)", h.log)
	case <-ctx.Done():
		cmd.Process.Kill()
		<-d.done
		return nil, ctx.Err()
	}
}

// status asks the running hermesd for its status.
func (h *harness) status(ctx context.Context) (control.Status, error) {
	c, err := control.Dial(h.socket)
	if err != nil {
		return control.Status{}, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return c.Status(ctx)
}

// restartUnit asks hermesd to restart unit, without waiting for the answer
// longer than the round lasts (the daemon may die under it).
func (h *harness) restartUnit(ctx context.Context, unit string) error {
	c, err := control.Dial(h.socket)
	if err != nil {
		return err
	}
	defer c.Close()
	err = c.Restart(ctx, unit)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
