package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/hermes-units/hermes/internal/testkit"
)

// TestScriptRefusesWithoutAwk: the supervisor finds what a group left at
// the owner's death with one awk over the process table. Where no awk is
// on its PATH it registers nothing, saying why, so that nothing runs that
// it could not end; with awk, the same line is accepted.
func TestScriptRefusesWithoutAwk(t *testing.T) {
	g, _ := sleepGroup(t, "g")
	for _, tc := range []struct{ path, want string }{
		{t.TempDir(), "N g1 no awk on PATH"},
		{os.Getenv("PATH"), "A g1"},
	} {
		sup := exec.Command("/bin/sh", "-c", script, "hermes-supervisor", "300", fmt.Sprint(syscall.Getpgrp()), "-", "-")
		sup.Env = []string{"PATH=" + tc.path}
		sup.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		in, rep := testkit.StartPiped(t, sup)
		fmt.Fprintf(in, "R g1 %d %d %d - -\nU g1\n", g.PGID, g.Leader.PID, g.Leader.StartTime)
		l, err := rep.ReadString('\n')
		if !strings.HasPrefix(l, tc.want) {
			t.Errorf("PATH=%s: registration answered %q, %v; want %q…", tc.path, l, err, tc.want)
		}
		in.Close()
		sup.Wait()
	}
	if !g.Leader.Alive() {
		t.Error("the registered group, unregistered before EOF, was ended")
	}
}
