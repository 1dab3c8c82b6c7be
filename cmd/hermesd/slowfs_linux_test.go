package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/internal/testkit/slowfs"
)

// slowUnits mounts a units directory of n `sleep` units on a filesystem
// whose every operation takes delay (a slow network filesystem), at
// dir/units; it skips, saying why, where FUSE cannot be mounted.
func slowUnits(t *testing.T, dir string, n int, delay time.Duration) *slowfs.FS {
	t.Helper()
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("u%02d.yaml", i)] = "command: [sleep, \"600\"]\n"
	}
	testkit.WriteUnits(t, filepath.Join(dir, "backing"), files)
	mnt := filepath.Join(dir, "units")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := slowfs.Mount(filepath.Join(dir, "backing"), mnt, delay)
	if errors.Is(err, slowfs.ErrUnavailable) {
		t.Skipf("a slow units directory needs a FUSE mount: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Unmount() })
	// A file changed less than two seconds before it is read is read
	// again at the next load (units.Cache): files this fresh would be
	// read twice for that reason alone.
	testkit.Eventually(t, 10*time.Second, "unit files older than two seconds", func() bool {
		var st syscall.Stat_t
		err := syscall.Stat(filepath.Join(dir, "backing", fmt.Sprintf("u%02d.yaml", n-1)), &st)
		return err == nil && time.Since(time.Unix(st.Ctim.Unix())) > 2500*time.Millisecond
	})
	return f
}

// startUnready runs hermesd on dir without waiting for its READY=1, and
// returns once its control socket exists.
func startUnready(t *testing.T, dir string) *hermesd {
	t.Helper()
	d := &hermesd{t: t, dir: dir, socket: filepath.Join(dir, "state", "ctl.sock"), done: make(chan error, 1)}
	logf, err := os.Create(filepath.Join(dir, "hermesd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	d.cmd = exec.Command(os.Args[0], "--units", filepath.Join(dir, "units"), "--state", filepath.Join(dir, "state"),
		"--socket", d.socket, "--config", filepath.Join(dir, "none.yaml"))
	d.cmd.Env = append(os.Environ(), roleEnv+"=hermesd")
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	t.Cleanup(func() { // a clean stop: the units leave the mount before it goes
		if d.cmd.ProcessState == nil {
			d.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-d.done:
			case <-time.After(60 * time.Second):
				d.cmd.Process.Kill()
				<-d.done
			}
		}
	})
	testkit.Eventually(t, 60*time.Second, "hermesd's control socket", func() bool {
		_, err := os.Stat(d.socket)
		return err == nil
	})
	return d
}

// TestSlowUnitsDir: hermesd on a units directory whose filesystem is slow
// reads each unit file once at start (the read that decides the proxy
// feeds the reconciler's), answers status at once while its first read
// of the directory is stuck, saying it is loading, starts every unit once
// the filesystem answers, and reads again only the file that was edited.
func TestSlowUnitsDir(t *testing.T) {
	const n = 20
	dir := t.TempDir()
	f := slowUnits(t, dir, n, 20*time.Millisecond)
	d := startUnready(t, dir)
	f.Hold() // the socket is up: what is left is the reconciler's first read (n stats at least)
	c, err := control.Dial(d.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	st, err := c.Status(ctx, "u00")
	if err != nil {
		t.Fatalf("status while the units directory does not answer: %v", err)
	}
	if st.Loading.IsZero() || len(st.Units) != 0 {
		t.Fatalf("status while the units directory does not answer: loading since %v, %d units; want a loading mark and no unit", st.Loading, len(st.Units))
	}
	f.Release()
	t.Logf("status answered while the first read was held; released after %d operations", f.Ops())
	var pid int
	testkit.Eventually(t, 90*time.Second, fmt.Sprintf("%d units running", n), func() bool {
		st := d.fullStatus()
		running := 0
		for _, u := range st.Units {
			if u.State == control.StateRunning {
				running++
			}
			if u.Name == "u00" {
				pid = u.PID
			}
		}
		return running == n && st.Loading.IsZero()
	})
	for name, k := range f.Opened() {
		if k != 1 {
			t.Errorf("hermesd opened %s %d times to start its units, want once", name, k)
		}
	}
	if got := len(f.Opened()); got != n {
		t.Errorf("hermesd opened %d unit files to start %d units", got, n)
	}

	t.Logf("%d units running after %d operations", n, f.Ops())
	before := f.Opened()
	if err := os.WriteFile(filepath.Join(dir, "units", "u00.yaml"), []byte("command: [sleep, \"601\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 60*time.Second, "u00 restarted on its edit", func() bool {
		u := d.status()["u00"]
		return u.State == control.StateRunning && u.PID != pid && u.PID != 0
	})
	for name, k := range f.Opened() {
		if name != "u00.yaml" && k != before[name] {
			t.Errorf("a reload after an edit of u00.yaml opened %s again", name)
		}
	}
}

// TestStopWhileUnitsDirStuck: a SIGTERM while the first read of the units
// directory is stuck on a filesystem that stopped answering stops hermesd
// cleanly (exit 0), with no unit started and a line that says why.
func TestStopWhileUnitsDirStuck(t *testing.T) {
	dir := t.TempDir()
	f := slowUnits(t, dir, 5, 20*time.Millisecond)
	d := startUnready(t, dir)
	f.Hold()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		if err != nil {
			t.Errorf("hermesd stopped during a stuck read: %v, want exit 0\n%s", err, d.logTail())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("hermesd still running 60 s after SIGTERM while its units directory does not answer\n%s", d.logTail())
	}
	if !fileHas(filepath.Join(dir, "hermesd.log"), "stopped while the units directory was being read", time.Second) {
		t.Errorf("hermesd's log does not say it stopped while reading:\n%s", d.logTail())
	}
}
