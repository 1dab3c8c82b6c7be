package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/ledger"
)

// TestLedgerFullDisk: with the state directory on a full file system, an
// owned spawn's record is not dropped after a few tries (it used to be,
// after 5 in about a second, and `who` then said "not started by hermes
// units"): it waits in memory, status says so, and it is written once
// space returns. Where a small tmpfs cannot be mounted (not root), the
// same path runs with the ledger's writes failing by injection.
func TestLedgerFullDisk(t *testing.T) {
	for _, how := range []string{"tmpfs", "injected"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			var free func()
			var inject func(o *Owner)
			switch how {
			case "tmpfs":
				if err := testkit.MountTmpfs(t, dir, 64<<10); err != nil {
					t.Skipf("cannot mount a small tmpfs to fill (%v; needs root): the injected row covers the path", err)
				}
				fill := filepath.Join(dir, "fill")
				f, err := os.Create(fill)
				if err != nil {
					t.Fatal(err)
				}
				for err == nil {
					_, err = f.Write(make([]byte, 4096))
				}
				f.Close()
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("filling the tmpfs: %v, want ENOSPC", err)
				}
				free = func() { os.Remove(fill) }
			case "injected":
				var full atomic.Bool
				full.Store(true)
				free = func() { full.Store(false) }
				inject = func(o *Owner) {
					write := o.jr.update
					o.jr.update = func(ctx context.Context, fn func([]ledger.Entry) ([]ledger.Entry, error)) error {
						if full.Load() {
							return fmt.Errorf("ledger: %w", &fs.PathError{Op: "write", Path: filepath.Join(dir, "ledger.json.tmp-1"), Err: syscall.ENOSPC})
						}
						return write(ctx, fn)
					}
				}
			}
			var mu sync.Mutex
			failed := 0
			logf := func(format string, args ...any) {
				if strings.Contains(fmt.Sprintf(format, args...), "ledger write of") {
					mu.Lock()
					failed++
					mu.Unlock()
				}
			}
			o := newTestOwner(t, Options{Mode: ModePGroup, StateDir: dir, Role: "worker", Grace: testGrace, Logf: logf})
			defer o.Close()
			if inject != nil {
				inject(o)
			}
			c, err := o.SpawnOwned(t.Context(), Spec{Unit: "web", Argv: []string{"sleep", "1000"}, Env: os.Environ()})
			if err != nil {
				t.Fatalf("owned spawn on a full disk: %v, want it started (its record waits)", err)
			}
			// More failed writes than the 5 tries after which the record
			// used to be dropped.
			if !testkit.Within(30*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return failed > 6 }) {
				mu.Lock()
				t.Fatalf("after 30s, %d failed ledger writes: the record is no longer retried", failed)
			}
			if s := o.Status().Ledger; !strings.Contains(s, "1 ledger records wait") || !strings.Contains(s, "no space left on device") {
				t.Errorf("status while the disk is full: ledger %q, want it to say 1 record waits and why", s)
			}
			free()
			recorded := func() bool {
				e, ok := entries(t, dir)["web"]
				return ok && e.Leader == c.Leader
			}
			if !testkit.Within(20*time.Second, recorded) {
				t.Fatalf("20s after space returned, web (pid %d) is not in the ledger: its record was lost", c.Leader.PID)
			}
			if !testkit.Within(5*time.Second, func() bool { return o.Status().Ledger == "" }) {
				t.Errorf("status once written: ledger %q, want no warning", o.Status().Ledger)
			}
		})
	}
}
