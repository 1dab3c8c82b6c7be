package testkit

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit/procfd"
	"github.com/hermes-units/hermes/proc"
)

// FDSettle bounds how long ExactFDs lets a process's descriptors settle.
const FDSettle = 3 * time.Second

// ExactFDs fails t (Errorf: the test goes on) unless pid comes to hold
// exactly want, descriptor number → a prefix of its target ("pipe:[",
// "/dev/null", a log's path), and no other descriptor, within FDSettle
// (see procfd.Settled). An extra descriptor is shown with owner's
// descriptors on the same target (owner may be nil), which names what
// leaked; who names pid in the failures ("unit web pid 4242").
func ExactFDs(t testing.TB, who string, pid int, want map[int]string, owner []procfd.FD) {
	t.Helper()
	diff, err := procfd.Settled(pid, want, owner, FDSettle)
	if err != nil {
		t.Errorf("%s: %v", who, err)
	}
	for _, d := range diff {
		t.Errorf("%s: %s", who, d)
	}
}

// SupervisorFDs fails t (Errorf) unless the death supervisor sup holds
// what SPEC §4 allows it: the read end of its death pipe on fd 0, whose
// write end the owner holds; the write end of its reply pipe on fd 1, whose
// read end the owner holds (the supervisor answers each registration on
// it); /dev/null on fd 2; and passed (nil: none), what the owner itself
// inherited without close-on-exec and passes to every child. ownerFDs are
// the owner's descriptors; owner names it in the failures ("hermesd").
func SupervisorFDs(t testing.TB, sup int, owner string, ownerFDs []procfd.FD, passed map[int]string) {
	t.Helper()
	want := map[int]string{0: "pipe:[", 1: "pipe:[", 2: "/dev/null"}
	maps.Copy(want, passed)
	ExactFDs(t, fmt.Sprintf("supervisor pid %d", sup), sup, want, ownerFDs)
	fds, err := procfd.List(sup)
	if err != nil {
		t.Error(err)
		return
	}
	// holds reports whether the owner holds an end of target: the write
	// end when write is set, else the read end.
	holds := func(target string, write bool) bool {
		return slices.ContainsFunc(ownerFDs, func(h procfd.FD) bool { return h.Target == target && h.Write() == write })
	}
	for _, f := range fds {
		switch f.Num {
		case 0:
			if f.Write() {
				t.Errorf("supervisor fd 0 %v is open for writing, want the read end of the death pipe", f)
			}
			if !holds(f.Target, true) {
				t.Errorf("%s holds no write end of the supervisor's pipe %s", owner, f.Target)
			}
		case 1:
			if !f.Write() || !holds(f.Target, false) {
				t.Errorf("supervisor fd 1 %v: want the write end of a reply pipe whose read end %s holds", f, owner)
			}
		}
	}
}

// SupervisorOf returns the pid of the death supervisor among owner's
// children (the process whose $0 is hermes-supervisor), 0 when none runs.
func SupervisorOf(owner int) int {
	pids, _ := proc.Find(func(s proc.Stat) bool { return s.PPID == owner })
	for _, pid := range pids {
		if a, err := proc.Cmdline(pid); err == nil && len(a) > 3 && a[3] == "hermes-supervisor" {
			return pid
		}
	}
	return 0
}
