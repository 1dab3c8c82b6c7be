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
	"github.com/hermes-units/hermes/internal/procfd"
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
// (when the machine offers it) and in pgroup mode, forced.
func TestDescriptorHygiene(t *testing.T) {
	if testing.Short() {
		t.Skip("starts hermesd processes")
	}
	for _, mode := range []string{"cgroup", "pgroup"} {
		t.Run(mode, func(t *testing.T) {
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
			d := startDaemonWith(t, dir, daemonOpts{role: "gateway", env: env, inherited: []*os.File{inherited}})
			st := d.fullStatus()
			if st.Supervisor.Mode != mode {
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
			hermesdFDs, err := procfd.List(d.cmd.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}

			for name, u := range us {
				for _, pid := range unitProcesses(t, u, name == "shell") {
					want := map[int]string{0: "/dev/null", 1: u.Log, 2: u.Log}
					checkFDs(t, fmt.Sprintf("unit %s pid %d", name, pid), pid, want, hermesdFDs)
				}
			}

			sup := d.fullStatus().Supervisor.PID
			if sup == 0 {
				t.Fatalf("no death supervisor runs with owned units registered")
			}
			checkFDs(t, fmt.Sprintf("supervisor pid %d", sup), sup, map[int]string{0: "pipe:[", 1: "pipe:[", 2: "/dev/null"}, hermesdFDs)
			fds, err := procfd.List(sup)
			if err != nil {
				t.Fatal(err)
			}
			if len(fds) > 0 && fds[0].Num == 0 {
				in := fds[0]
				if in.Write() {
					t.Errorf("supervisor fd 0 %v is open for writing, want the read end of the death pipe", in)
				}
				writer := false
				for _, h := range hermesdFDs {
					writer = writer || h.Target == in.Target && h.Write()
				}
				if !writer {
					t.Errorf("hermesd holds no write end of the supervisor's pipe %s", in.Target)
				}
			}
			// fd 1 is the write end of the reply pipe, whose read end only
			// hermesd holds: the supervisor answers each registration on it.
			for _, out := range fds {
				if out.Num != 1 {
					continue
				}
				reader := false
				for _, h := range hermesdFDs {
					reader = reader || h.Target == out.Target && !h.Write()
				}
				if !out.Write() || !reader {
					t.Errorf("supervisor fd 1 %v: want the write end of a reply pipe whose read end hermesd holds", out)
				}
			}
		})
	}
}

// writeFDUnits writes the units of TestDescriptorHygiene.
func writeFDUnits(t *testing.T, dir string) {
	t.Helper()
	ud := filepath.Join(dir, "units")
	if err := os.MkdirAll(ud, 0o700); err != nil {
		t.Fatal(err)
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skipf("no sleep program: %v", err)
	}
	files := map[string]string{
		"cmd":      fmt.Sprintf("command: [%q, \"1000\"]\n", sleep),
		"shell":    fmt.Sprintf("shell: \"%s 1001 & %s 1002 & wait\"\n", sleep, sleep),
		"keep":     fmt.Sprintf("command: [%q, \"1003\"]\nownership: adoptable\nreason: kept across gateway restarts in the test\n", sleep),
		"notified": fmt.Sprintf("command: [%q]\nenv: {%s: notify-exec}\nready: {notify: true}\n", os.Args[0], roleEnv),
	}
	for name, y := range files {
		if err := os.WriteFile(filepath.Join(ud, name+".yaml"), []byte(y), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// unitProcesses returns u's leader, its descendants and, in cgroup mode,
// every member of its cgroup. With children, it waits (polling: another
// process's fork gives the test no event) until the leader has two.
func unitProcesses(t *testing.T, u control.Unit, children bool) []int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var below []int
	for {
		var err error
		if below, err = procfd.Descendants(u.PID); err != nil {
			t.Fatal(err)
		}
		if !children || len(below) >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if children && len(below) < 2 {
		t.Fatalf("unit %s: %d processes below the leader %d, want its two children", u.Name, len(below), u.PID)
	}
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

// checkFDs asserts that pid comes to hold exactly want (fd → target
// prefix), no other descriptor; an extra one is shown with hermesd's
// descriptors on the same target, which names the leak.
func checkFDs(t *testing.T, who string, pid int, want map[int]string, hermesd []procfd.FD) {
	t.Helper()
	diff, err := procfd.Settled(pid, want, hermesd, 3*time.Second)
	if err != nil {
		t.Errorf("%s: %v", who, err)
	}
	for _, d := range diff {
		t.Errorf("%s: %s", who, d)
	}
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
	deadline := time.Now().Add(5 * time.Second)
	for { // the cgroup empties once the kernel has reaped the group
		err := os.Remove(cgroup)
		if err == nil || os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("survivor's cgroup %s not removed: %v", cgroup, err)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
