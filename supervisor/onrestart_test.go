package supervisor

import (
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
)

// TestOnRestart: a supervisor killed from outside is reported once
// through Options.OnRestart, with its pid, and its spawns' ledger writes
// through OnLedgerWrite.
func TestOnRestart(t *testing.T) {
	var mu sync.Mutex
	var pids []int
	var writes int
	o, err := New(Options{StateDir: t.TempDir(), Mode: ModePGroup, Role: "worker",
		OnRestart: func(pid int, why string) {
			mu.Lock()
			defer mu.Unlock()
			pids = append(pids, pid)
		},
		OnLedgerWrite: func(time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			writes++
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	c, err := o.SpawnOwned(t.Context(), Spec{Unit: "sleeper", Argv: []string{"/bin/sleep", "1000"}, Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Stop(t.Context(), c.Group, syscall.SIGKILL, time.Second)
	sup := o.Status().PID
	if sup == 0 {
		t.Fatal("no supervisor runs after a spawn")
	}
	if !testkit.Within(10*time.Second, func() bool { // the journal writes behind the spawn
		mu.Lock()
		defer mu.Unlock()
		return writes > 0
	}) {
		t.Error("OnLedgerWrite was not called within 10s for the spawn's ledger entry")
	}
	syscall.Kill(sup, syscall.SIGKILL)
	if !testkit.Within(10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(pids) > 0
	}) {
		t.Fatalf("OnRestart not called within 10s of killing supervisor %d", sup)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(pids) != 1 || pids[0] != sup {
		t.Errorf("OnRestart pids: got %v, want [%d]", pids, sup)
	}
}
