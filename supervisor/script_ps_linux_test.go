//go:build linux

package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
)

// TestScriptWithoutProc runs the supervisor script as on darwin: in a mount
// namespace whose /proc is an empty tmpfs, given no TABLE (it must see
// there is no /proc and take the ps path). Only ps, run by a wrapper in a
// namespace of its own where the real /proc is mounted back, can read the
// process table. At EOF the registered group dies, and so does its
// escapee: a setsid child of the group's leader that carries no tag, so
// that only the ps path's sweep by ancestry finds it; a stranger in a
// session of its own is spared. The wrapper's log shows ps was used.
func TestScriptWithoutProc(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: mount namespaces hide /proc from the script")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare(1)")
	}
	realPS, err := exec.LookPath("ps")
	if err != nil {
		t.Skip("no ps on PATH")
	}
	dir := t.TempDir()
	keep, bin, log := filepath.Join(dir, "proc"), filepath.Join(dir, "bin"), filepath.Join(dir, "ps.log")
	for _, d := range []string{keep, bin} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	wrapper := fmt.Sprintf("#!/bin/sh\necho \"$*\" >>'%s'\nexec unshare -m /bin/sh -c 'mount --bind \"$0\" /proc && exec \"$@\"' '%s' '%s' \"$@\"\n", log, keep, realPS)
	if err := os.WriteFile(filepath.Join(bin, "ps"), []byte(wrapper), 0o700); err != nil {
		t.Fatal(err)
	}

	leader, escPID := groupWithEscapee(t)
	stranger := exec.Command("sleep", "1002")
	stranger.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stranger.Process.Kill(); stranger.Wait() })

	sup := exec.Command("unshare", "-m", "/bin/sh", "-c",
		`mount --bind /proc "$0" && mount -t tmpfs none /proc && exec /bin/sh -c "$1" hermes-supervisor 300 "$2" - -`,
		keep, script, strconv.Itoa(syscall.Getpgrp()))
	sup.Env = []string{"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"}
	sup.Dir = "/"
	sup.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	in, rep := testkit.StartPiped(t, sup)
	t.Cleanup(func() { sup.Process.Kill(); sup.Wait() })
	fmt.Fprintf(in, "R g1 %d %d %d k1 -\n", leader.PID, leader.PID, leader.StartTime)
	if l, err := rep.ReadString('\n'); l != "A g1\n" {
		t.Fatalf("registration: got %q, %v; want \"A g1\\n\"", l, err)
	}
	exitAtEOF(t, in, sup, 20*time.Second)
	if !testkit.Within(5*time.Second, func() bool { return pidGone(leader.PID) && pidGone(escPID) }) {
		t.Errorf("after EOF: leader gone %v, escapee gone %v; want both gone", pidGone(leader.PID), pidGone(escPID))
	}
	if pidGone(stranger.Process.Pid) {
		t.Error("the stranger (not of the group, no ancestor in it) was killed")
	}
	b, _ := os.ReadFile(log)
	if !strings.Contains(string(b), "-A -o pid=,ppid=,pgid=,stat=,lstart=") || !strings.Contains(string(b), "-o lstart= -p "+strconv.Itoa(leader.PID)) {
		t.Errorf("ps calls:\n%s\nwant the table read and the leader's lstart at registration: the script did not take the ps path", b)
	}
}
