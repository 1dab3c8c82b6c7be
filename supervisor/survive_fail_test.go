package supervisor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/ledger"
)

// TestSurviveRecordFails: a survivor whose ledger record cannot be written
// never runs unrecorded: the spawn fails with the ledger's error, its gated
// child is gone and its kept cgroup removed, in both modes. It holds the
// one abort of SpawnOwned's steps to what each mode made (the gate's EOF,
// the cgroup's kill).
func TestSurviveRecordFails(t *testing.T) {
	for _, mode := range modes(t) {
		t.Run(string(mode), func(t *testing.T) {
			o := newTestOwner(t, Options{Mode: mode, StateDir: t.TempDir(), Role: "gateway", Grace: testGrace})
			defer o.Close()
			if o.tree != nil {
				// Another owner's kept unit of the same name, as other
				// packages' tests running beside this one leave: not this
				// spawn's remains.
				other := filepath.Join(o.tree.base, keptDir, "keep.999999999_1_1")
				if err := os.MkdirAll(other, 0o755); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.Remove(other) })
			}
			refused := errors.New("injected: the ledger cannot be written")
			o.jr.update = func(context.Context, func([]ledger.Entry) ([]ledger.Entry, error)) error { return refused }
			marker := "survive-fail-" + string(mode)
			done := make(chan error, 1)
			var c *Child
			go func() {
				var err error
				c, err = o.SpawnOwned(t.Context(), Spec{Unit: "keep", Argv: []string{"sleep", "1000"},
					Env: append(os.Environ(), envRow+"="+marker), Ownership: "persist_on_release", Reason: "test", Survive: true})
				done <- err
			}()
			err := testkit.Receive(t, 60*time.Second, done, "SpawnOwned of a survivor whose record fails did not return within 60s")
			if c != nil || !errors.Is(err, refused) || !strings.Contains(err.Error(), "spawn keep: record in ledger") {
				t.Fatalf("got child %v, error %v; want no child and the ledger's error", c, err)
			}
			if pids := marked(marker); len(pids) != 0 {
				t.Errorf("processes of the failed spawn left running: %v", pids)
			}
			if o.tree != nil {
				kept, _ := os.ReadDir(o.tree.base + "/" + keptDir)
				for _, e := range kept {
					// Other owners (other packages' tests) keep units named
					// keep here too: only this owner's keys are its spawns'.
					if strings.HasPrefix(e.Name(), "keep."+o.name+"_") {
						t.Errorf("kept cgroup %s left behind by the failed spawn", e.Name())
					}
				}
			}
		})
	}
}
