package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/notify"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/internal/testkit/procfd"
	"github.com/hermes-units/hermes/proc"
)

// The role "notify-exec" of the test binary: a unit with ready: {notify:
// true} that sends READY=1 and then execs sleep, so that the process the
// test inspects holds only what it inherited (the Go runtime's own
// descriptors are close-on-exec and go at the exec). Dispatched from init,
// before TestMain, so that main_test.go needs no case for it.
func init() {
	if os.Getenv(roleEnv) == "notify-exec" {
		playNotifyExec()
	}
}

func playNotifyExec() {
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: os.Getenv("NOTIFY_SOCKET"), Net: "unixgram"})
	if err != nil {
		fmt.Println("notify:", err)
		os.Exit(1)
	}
	if _, err := c.Write([]byte("READY=1")); err != nil {
		fmt.Println("notify:", err)
		os.Exit(1)
	}
	c.Close()
	sleep, err := exec.LookPath("sleep")
	if err == nil {
		err = syscall.Exec(sleep, []string{"sleep", "1000"}, os.Environ())
	}
	fmt.Println("exec sleep:", err)
	os.Exit(1)
}

// TestDescriptorHygiene (issue 7, item 5; SPEC §4): every process of every
// unit — owned command, owned shell with two children, adoptable survivor,
// notify unit — holds exactly fd 0 (/dev/null) and fds 1 and 2 (its log
// file), nothing else: no end of the death pipe, no control or notify
// socket, no ledger or state lock, no gate pipe, no cgroup directory, no
// hermesd log. The death supervisor holds exactly the read end of its pipe
// on fd 0 and /dev/null on fds 1 and 2 (it prints nothing; holding hermesd's
// stderr would keep a terminal or a log pipe of hermesd open after its
// death): no write end of its own pipe (EOF would never come), nothing of
// hermesd's. hermesd is started with a descriptor it inherited without
// close-on-exec (as a careless parent leaves one, or a script's flock): that
// one must reach neither the units nor the supervisor. Run in cgroup mode
// (when the machine offers it) and in pgroup mode, forced; and in pgroup
// mode with per-unit notify sockets (notify.ModeUnit), where the notify
// unit is ready by a socket of its own and holds none of them.
func TestDescriptorHygiene(t *testing.T) {
	needsProcesses(t, "hermesd processes")
	for _, tc := range []struct {
		name, mode string
		notify     notify.Mode // "" the platform's default
	}{
		{"cgroup", "cgroup", ""},
		{"pgroup", "pgroup", ""},
		{"pgroup+notify=unit", "pgroup", notify.ModeUnit},
	} {
		mode := tc.mode
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFDUnits(t, dir)
			inherited, err := os.OpenFile(filepath.Join(dir, "inherited-by-hermesd"), os.O_CREATE|os.O_RDWR, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			defer inherited.Close()
			var keep proc.Identity // the adoptable survivor, killed after hermesd's stop
			var keepCgroup string
			t.Cleanup(func() { killSurvivor(t, keep, keepCgroup) })
			env := []string{modeEnv + "=" + mode}
			if mode == "cgroup" {
				env = []string{modeEnv + "="} // automatic: cgroup where the machine offers it
			}
			if tc.notify != "" {
				env = append(env, notify.ModeEnv+"="+string(tc.notify))
			}
			d := startDaemonWith(t, dir, daemonOpts{role: "gateway", env: env, inherited: []*os.File{inherited}})
			st := d.fullStatus()
			if string(st.Supervisor.Mode) != mode {
				if mode == "cgroup" {
					t.Skipf("hermesd chose %s mode: no writable cgroup v2 hierarchy here, so cgroup mode is untested; the pgroup case covers the fallback", st.Supervisor.Mode)
				}
				t.Fatalf("supervisor mode %q, want %q", st.Supervisor.Mode, mode)
			}
			us := map[string]control.Unit{}
			for _, name := range []string{"cmd", "shell", "keep", "notified"} {
				us[name] = d.waitUnit(name, "running and ready", func(u control.Unit) bool { return u.State == "running" && u.Ready })
			}
			if id, err := proc.Read(us["keep"].PID); err == nil {
				keep, keepCgroup = id, us["keep"].Cgroup
			}
			if tc.notify == notify.ModeUnit {
				notifiedOwnSocket(t, us["notified"].PID, filepath.Join(dir, "state", "notify"))
			}
			hermesdFDs, err := procfd.List(d.cmd.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}

			for name, u := range us {
				for _, pid := range unitProcesses(t, u, name == "shell") {
					// A survivor writes its log file; an owned unit, pipes
					// that hermesd copies into it (stamped logs).
					want := map[int]string{0: "/dev/null", 1: u.Log, 2: u.Log}
					if name != "keep" {
						want[1], want[2] = "pipe:[", "pipe:["
					}
					who := fmt.Sprintf("unit %s pid %d", name, pid)
					testkit.ExactFDs(t, who, pid, want, hermesdFDs)
					if name != "keep" {
						outputPipes(t, who, pid, hermesdFDs)
					}
				}
			}

			sup := d.fullStatus().Supervisor.PID
			if sup == 0 {
				t.Fatalf("no death supervisor runs with owned units registered")
			}
			testkit.SupervisorFDs(t, sup, "hermesd", hermesdFDs, nil)
		})
	}
}

// outputPipes fails t unless pid's stdout and stderr are two pipes whose
// read ends hermesd holds, and no write end of them: its copiers see EOF
// when the unit's processes close them.
func outputPipes(t *testing.T, who string, pid int, hermesdFDs []procfd.FD) {
	t.Helper()
	fds, err := procfd.List(pid)
	if err != nil {
		t.Fatal(err)
	}
	targets := map[int]string{}
	for _, f := range fds {
		targets[f.Num] = f.Target
	}
	if targets[1] == targets[2] {
		t.Errorf("%s: stdout and stderr are one file %s, want a pipe each", who, targets[1])
	}
	for _, n := range []int{1, 2} {
		var read, write bool
		for _, h := range hermesdFDs {
			if h.Target == targets[n] {
				read, write = read || !h.Write(), write || h.Write()
			}
		}
		if !read || write {
			t.Errorf("%s: fd %d is %s; hermesd holds its read end %v, a write end %v; want the read end only", who, n, targets[n], read, write)
		}
	}
}

// notifiedOwnSocket fails t unless pid was told a NOTIFY_SOCKET in dir.
// The unit is ready as soon as it sent READY=1, just before its exec of
// sleep, during which its environment reads empty: it is read again until
// it is not.
func notifiedOwnSocket(t *testing.T, pid int, dir string) {
	t.Helper()
	var env []string
	testkit.EventuallyOK(t, 10*time.Second, func() error {
		var err error
		if env, err = proc.Environ(pid); err != nil {
			t.Fatal(err)
		}
		if len(env) == 0 {
			return fmt.Errorf("the notify unit (pid %d) shows no environment yet", pid)
		}
		return nil
	})
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "NOTIFY_SOCKET="); ok && filepath.Dir(v) == dir {
			return
		}
	}
	t.Errorf("the notify unit (pid %d) has no NOTIFY_SOCKET in %s: %q", pid, dir, env)
}

// writeFDUnits writes the units of TestDescriptorHygiene.
func writeFDUnits(t *testing.T, dir string) {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skipf("no sleep program: %v", err)
	}
	testkit.WriteUnits(t, filepath.Join(dir, "units"), map[string]string{
		"cmd.yaml":      fmt.Sprintf("command: [%q, \"1000\"]\n", sleep),
		"shell.yaml":    fmt.Sprintf("shell: \"%s 1001 & %s 1002 & wait\"\n", sleep, sleep),
		"keep.yaml":     fmt.Sprintf("command: [%q, \"1003\"]\n", sleep) + ownershipYAML("adoptable"),
		"notified.yaml": fmt.Sprintf("command: [%q]\nenv: {%s: notify-exec}\nready: {notify: true}\n", os.Args[0], roleEnv),
	})
}

// unitProcesses returns u's leader, its descendants and, in cgroup mode,
// every member of its cgroup. With children, it waits (polling: another
// process's fork gives the test no event) until the leader has two.
func unitProcesses(t *testing.T, u control.Unit, children bool) []int {
	t.Helper()
	var below []int
	testkit.EventuallyOK(t, 10*time.Second, func() error {
		var err error
		if below, err = procfd.Descendants(u.PID); err != nil {
			t.Fatal(err)
		}
		if children && len(below) < 2 {
			return fmt.Errorf("unit %s: %d processes below the leader %d, want its two children", u.Name, len(below), u.PID)
		}
		return nil
	})
	seen := map[int]bool{u.PID: true}
	pids := []int{u.PID}
	add := func(p int) {
		if !seen[p] {
			seen[p] = true
			pids = append(pids, p)
		}
	}
	for _, p := range below {
		add(p)
	}
	if u.Cgroup != "" {
		b, err := os.ReadFile(filepath.Join(u.Cgroup, "cgroup.procs"))
		if err != nil {
			t.Fatalf("unit %s: %v", u.Name, err)
		}
		for _, f := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(f); err == nil {
				add(p)
			}
		}
	}
	return pids
}

// killSurvivor kills the adoptable unit that outlives hermesd's clean stop,
// and removes the cgroup it leaves (cgroup mode).
func killSurvivor(t *testing.T, id proc.Identity, cgroup string) {
	if id.IsZero() {
		return
	}
	if id.Alive() {
		syscall.Kill(-id.PID, syscall.SIGKILL)
	}
	if cgroup == "" {
		return
	}
	var err error
	// The cgroup empties once the kernel has reaped the group.
	if !testkit.Within(5*time.Second, func() bool { err = os.Remove(cgroup); return err == nil || os.IsNotExist(err) }) {
		t.Errorf("survivor's cgroup %s not removed: %v", cgroup, err)
	}
}
