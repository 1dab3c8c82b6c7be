package reconciler

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
)

// orphanHolder is a Daemons that holds one process as no unit's (an
// orphan: nothing named a unit when it was found) and lists it among a
// group's members only once a claim for that group names it.
type orphanHolder struct {
	mu      sync.Mutex
	orphan  proc.Identity // zero: none held
	claimed bool
	why     string
	looks   int
	looked  func(n int) // called at each look (Members) with its number, from 1
}

func (h *orphanHolder) Members(supervisor.Group) []proc.Identity {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.looks++
	if h.looked != nil {
		h.looked(h.looks)
	}
	if h.claimed {
		return []proc.Identity{h.orphan}
	}
	return nil
}

func (h *orphanHolder) Empty(g supervisor.Group) bool { return len(h.Members(g)) == 0 }

func (h *orphanHolder) StopMain(context.Context, supervisor.Group, proc.Identity, syscall.Signal, time.Duration) error {
	return nil
}

func (h *orphanHolder) Unclaimed(supervisor.Group) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.orphan.PID != 0 && !h.claimed
}

func (h *orphanHolder) Claim(_ supervisor.Group, pid int, why string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if pid != h.orphan.PID || h.orphan.PID == 0 {
		return false
	}
	h.claimed, h.why = true, why
	return true
}

// TestFindMainClaimsTheOrphan: a forking unit whose daemon is held as no
// unit's (registered as an orphan before evidence named the unit) takes
// it as its main process once its pid file names it: the pid file is that
// evidence, and the process is claimed for the unit, not refused as "not
// in the unit's group", nor the unit failed as one that "left no process".
// A launcher that left no process while an orphan is held waits for its
// pid file (the daemon may write it later) instead of failing at once;
// with nothing held it fails at once, as before. Without a pid file
// nothing names the orphan: it is never the main process, and the unit
// fails. A pid file that names a process the Daemons does not hold as an
// orphan is refused as before.
func TestFindMainClaimsTheOrphan(t *testing.T) {
	self, err := proc.Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	g := supervisor.Group{Unit: "d", PGID: 1 << 30}
	write := func(t *testing.T, pid int) string {
		pf := filepath.Join(t.TempDir(), "d.pid")
		if err := os.WriteFile(pf, []byte(strconv.Itoa(pid)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return pf
	}
	t.Run("pid file names it", func(t *testing.T) {
		h := &orphanHolder{orphan: self}
		got, err := findMain(t.Context(), h, g, write(t, self.PID), time.Now().Add(5*time.Second))
		if err != nil || got != self {
			t.Fatalf("findMain: %v, %v; want the orphan %v its pid file names", got, err, self)
		}
		if h.why == "" {
			t.Error("the orphan was given without a reason")
		}
	})
	t.Run("pid file written later", func(t *testing.T) {
		pf := filepath.Join(t.TempDir(), "d.pid")
		h := &orphanHolder{orphan: self, looked: func(n int) {
			if n == 3 {
				if err := os.WriteFile(pf, []byte(strconv.Itoa(self.PID)+"\n"), 0o600); err != nil {
					t.Error(err)
				}
			}
		}}
		got, err := findMain(t.Context(), h, g, pf, time.Now().Add(time.Minute))
		if err != nil || got != self {
			t.Fatalf("findMain: %v, %v; want the orphan %v its pid file names once written", got, err, self)
		}
	})
	t.Run("nothing held", func(t *testing.T) {
		h := &orphanHolder{}
		got, err := findMain(t.Context(), h, g, filepath.Join(t.TempDir(), "d.pid"), time.Now().Add(time.Minute))
		if err == nil || h.looks != 1 {
			t.Fatalf("findMain: %v, %v after %d looks; want it to fail at the first", got, err, h.looks)
		}
	})
	t.Run("no pid file", func(t *testing.T) {
		h := &orphanHolder{orphan: self}
		got, err := findMain(t.Context(), h, g, "", time.Now().Add(time.Second))
		if err == nil || h.claimed {
			t.Fatalf("findMain: %v, %v (claimed %v); want an error, the orphan unclaimed", got, err, h.claimed)
		}
	})
	t.Run("pid file names another", func(t *testing.T) {
		h := &orphanHolder{orphan: proc.Identity{PID: self.PID + 1<<22}}
		got, err := findMain(t.Context(), h, g, write(t, self.PID), time.Now().Add(time.Second))
		if err == nil || h.claimed {
			t.Fatalf("findMain: %v, %v (claimed %v); want an error, nothing claimed", got, err, h.claimed)
		}
	})
}
