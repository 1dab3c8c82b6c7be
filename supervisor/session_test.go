package supervisor

import (
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

// TestSpawnOwnSession: each spawn leads a session of its own (as systemd
// starts services), so that a process of one spawn cannot join another
// spawn's process group, nor the owner's: setpgid stays within a session.
// A child of unit atk tries os.setpgid into unit victim's group and into
// the owner's; both fail (EPERM), in each mode this machine has.
func TestSpawnOwnSession(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH: the unit's setpgid is python's os.setpgid")
	}
	for _, m := range modes(t) {
		t.Run(string(m), func(t *testing.T) {
			o := newTestOwner(t, Options{Mode: m, Grace: testGrace})
			defer o.Close()
			victim, err := o.SpawnOwned(t.Context(), Spec{Unit: "victim", Argv: []string{"sleep", "1000"}, Env: []string{"PATH=/usr/bin:/bin"}})
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "out")
			const prog = `import os, sys
res = []
for g in sys.argv[2:]:
    try:
        os.setpgid(0, int(g))
        res.append("joined")
    except OSError as e:
        res.append("refused:" + str(e.errno))
open(sys.argv[1], "w").write(" ".join(res) + "\n")
`
			_, err = o.SpawnOwned(t.Context(), Spec{Unit: "atk", Env: []string{"PATH=/usr/bin:/bin"},
				Argv: []string{py, "-c", prog, out, strconv.Itoa(victim.PGID), strconv.Itoa(syscall.Getpgrp())}})
			if err != nil {
				t.Fatal(err)
			}
			var got string
			testkit.Eventually(t, 10*time.Second, "the unit's setpgid results", func() bool {
				b, err := os.ReadFile(out)
				got = strings.TrimSpace(string(b))
				return err == nil && strings.HasSuffix(string(b), "\n")
			})
			want := "refused:1 refused:1" // EPERM: another session's group
			if got != want {
				t.Errorf("setpgid into victim's group %d and the owner's %d: got %q, want %q", victim.PGID, syscall.Getpgrp(), got, want)
			}
			if sid, _ := getsid(victim.Leader.PID); sid != victim.Leader.PID {
				t.Errorf("victim's session: got %d, want its own (%d)", sid, victim.Leader.PID)
			}
		})
	}
}

func getsid(pid int) (int, error) {
	sid, _, errno := syscall.RawSyscall(syscall.SYS_GETSID, uintptr(pid), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(sid), nil
}
