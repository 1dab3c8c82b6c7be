package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/notify"
)

// TestSystemdNotify runs hermesd as systemd would run a Type=notify service
// with WatchdogSec: it must say READY=1 with a STATUS=, and then WATCHDOG=1
// on its own, from its own pid.
func TestSystemdNotify(t *testing.T) {
	dir := t.TempDir()
	writeUnits(t, dir, map[string]string{"web": "owned"})
	nsPath := filepath.Join(t.TempDir(), "n.sock")
	ns, err := notify.Listen(nsPath)
	if err != nil {
		t.Fatal(err)
	}
	msgs := make(chan notify.Message, 64)
	nsDone := make(chan error, 1)
	go func() {
		nsDone <- ns.Run(t.Context(), func(m notify.Message) {
			select {
			case msgs <- m:
			default:
			}
		})
	}()

	cmd := exec.Command(os.Args[0], "--units", filepath.Join(dir, "units"), "--state", filepath.Join(dir, "state"),
		"--socket", filepath.Join(dir, "state", "ctl.sock"), "--config", filepath.Join(dir, "none.yaml"))
	// 200 ms: hermesd pings at half of it.
	cmd.Env = append(os.Environ(), roleEnv+"=hermesd", "NOTIFY_SOCKET="+nsPath, "WATCHDOG_USEC=200000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		<-nsDone // t.Context is done by now: the socket is closed
	})

	var ready, status, watchdog bool
	deadline := time.After(20 * time.Second)
	for !ready || !status || !watchdog {
		select {
		case m := <-msgs:
			if m.PID != cmd.Process.Pid {
				t.Errorf("message %q from pid %d, want hermesd's pid %d", m.Raw, m.PID, cmd.Process.Pid)
			}
			if m.Ready() {
				ready = true
			}
			if m.Fields["STATUS"] != "" {
				status = true
			}
			if m.Fields["WATCHDOG"] == "1" {
				watchdog = true
			}
		case <-deadline:
			t.Fatalf("within 20s: READY=1 %v, STATUS= %v, WATCHDOG=1 %v; want all", ready, status, watchdog)
		}
	}
}
