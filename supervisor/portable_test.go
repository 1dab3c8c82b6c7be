//go:build linux

package supervisor

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
	"golang.org/x/sys/unix"
)

// TestPortableOrphans (Linux: the portable backend there; darwin has no
// other): with the portable backend the owner is no child subreaper, as
// on darwin. A unit double-forks two daemons whose middle
// processes exit at once, so both are re-parented to init (or to a
// subreaper above the owner) before any scan sees them. The one that kept
// its tags is found by them and listed among the unit's members; the one
// whose environment was erased (env -i) cannot be told from any other
// orphan of the machine, and is not taken: nothing weaker than the tags or
// an earlier scan attributes a process that is not below the owner. No
// scan runs until both are re-parented (the test holds the scans' lock):
// on a loaded machine a scan that came while a daemon's middle process
// still lived saw it below the unit, and that earlier scan is evidence
// that names the unit.
func TestPortableOrphans(t *testing.T) {
	// The subreaper is the process's: an earlier test's native owner in
	// this test binary made it one. Undone for this test (no parallel
	// test runs meanwhile), as a process with a portable owner alone is.
	var was int32
	if err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&was)), 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, uintptr(was), 0, 0, 0) })
	o := newTestOwner(t, Options{Mode: ModePGroup, Backend: BackendPortable, Grace: testGrace})
	defer o.Close()
	if o.Mode() != ModePGroup || o.Backend() != BackendPortable {
		t.Fatalf("mode %s backend %s, want pgroup portable", o.Mode(), o.Backend())
	}
	o.scanMu.Lock()
	scans := sync.OnceFunc(o.scanMu.Unlock)
	defer scans()
	dir := t.TempDir()
	tagged, erased := dir+"/tagged", dir+"/erased"
	sh := `(setsid sleep 1001 & echo $! >"$1.tmp"; mv "$1.tmp" "$1") &
(setsid env -i sleep 1002 & echo $! >"$2.tmp"; mv "$2.tmp" "$2") &
wait; exec sleep 1000`
	c, err := o.SpawnOwned(t.Context(), Spec{Unit: "web", Argv: []string{"/bin/sh", "-c", sh, "sh", tagged, erased},
		Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	pidIn := func(path string) int {
		var pid int
		testkit.Eventually(t, 10*time.Second, "a pid in "+path, func() bool {
			b, err := os.ReadFile(path)
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			return err == nil && pid > 0
		})
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
		return pid
	}
	tp, ep := pidIn(tagged), pidIn(erased)
	for _, pid := range []int{tp, ep} {
		// Orphaned: its parent, the subshell, exited; not re-parented to
		// the owner, which is no subreaper.
		testkit.Eventually(t, 10*time.Second, "daemon "+strconv.Itoa(pid)+" re-parented away from its subshell", func() bool {
			st, err := proc.ReadStat(pid)
			m, _ := proc.GroupMembers(c.PGID)
			return err == nil && !slices.Contains(m, st.PPID)
		})
		if st, _ := proc.ReadStat(pid); st.PPID == os.Getpid() {
			t.Fatalf("daemon %d was re-parented to the owner: the portable backend made it a subreaper", pid)
		}
	}
	// Re-parented is not yet the daemon: the erased one runs setsid, then
	// env -i, then sleep, and until that last exec it carries the unit's
	// tags (a scan then rightly takes it). On a loaded machine the
	// subshell exits before that.
	testkit.Eventually(t, 10*time.Second, "daemon "+strconv.Itoa(ep)+" running sleep, its environment erased", func() bool {
		st, err := proc.ReadStat(ep)
		env, eerr := proc.Environ(ep)
		return err == nil && st.Comm == "sleep" && eerr == nil && len(env) == 0
	})
	scans()
	var pids []int
	testkit.Eventually(t, 10*time.Second, "the tagged orphan among web's members", func() bool {
		pids = pids[:0]
		for _, id := range o.Members(c.Group) {
			pids = append(pids, id.PID)
		}
		return slices.Contains(pids, tp)
	})
	if slices.Contains(pids, ep) {
		t.Errorf("members %v hold the orphan %d whose tags were erased: it cannot be told from a stranger", pids, ep)
	}
	if err := o.Stop(t.Context(), c.Group, syscall.SIGTERM, time.Second); err != nil {
		t.Fatal(err)
	}
	if st, err := proc.ReadStat(tp); err == nil && !st.Zombie() {
		t.Errorf("the tagged orphan %d outlived Stop of its unit", tp)
	}
	if st, err := proc.ReadStat(ep); err != nil || st.Zombie() {
		t.Errorf("the untagged orphan %d was stopped with a unit it cannot be told to belong to", ep)
	}
	if err := o.Close(); err != nil && !errors.Is(err, ErrClosed) {
		t.Error(err)
	}
}
