package reconciler

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/units"
)

// TestEditAmongMany: with hermesd's loads (a units.Cache, and
// Options.LoadChanges told which files changed), an edit of one unit file
// among many stops and starts that unit and the unit that requires it,
// and no other, and hashes its spec alone. An edit of a unit's
// dependencies, which restarts nothing, is seen: once it requires
// another unit, an edit of the one it required leaves it running, and an
// edit of the other stops it.
func TestEditAmongMany(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 40
		sleep := "command: [/bin/sleep, infinity]\n"
		files := map[string]string{"dep.yaml": sleep + "requires: [u01]\nafter: [u01]\n"}
		for i := range n {
			files[fmt.Sprintf("u%02d.yaml", i)] = sleep
		}
		dir := testkit.UnitsDir(t, files)
		cache := &units.Cache{}
		var mu sync.Mutex
		var told []string
		changes := make(chan struct{}, 1)
		sp := &fakeSpawner{fail: map[string]error{}}
		o := fakeOptions(t, sp, LoadDir(&units.Loader{Insecure: true, Cache: cache}, dir))
		o.Changes = changes
		o.LoadChanges = func(ctx context.Context) (Loaded, error) {
			mu.Lock()
			names := told
			told = nil
			mu.Unlock()
			return LoadDir(&units.Loader{Insecure: true, Cache: cache, Changes: &units.Changes{Names: names}}, dir)(ctx)
		}
		r := mustNew(t, o)
		var hashed []string
		r.load.hash = func(s units.Spec) string {
			mu.Lock()
			hashed = append(hashed, s.Name)
			mu.Unlock()
			return s.Hash()
		}
		runInTest(t, r)
		synctest.Wait()
		edit := func(file, content string) (stopped, spawned, hashedNow []string) {
			t.Helper()
			sp.mu.Lock()
			stops, spawns := len(sp.stops), len(sp.spawns)
			sp.mu.Unlock()
			mu.Lock()
			hashed = nil
			told = append(told, file)
			mu.Unlock()
			tmp := filepath.Join(dir, ".edit.tmp")
			if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, filepath.Join(dir, file)); err != nil {
				t.Fatal(err)
			}
			changes <- struct{}{}
			synctest.Wait()
			sp.mu.Lock()
			defer sp.mu.Unlock()
			for _, s := range sp.stops[stops:] {
				stopped = append(stopped, s.unit)
			}
			for _, s := range sp.spawns[spawns:] {
				spawned = append(spawned, s.spec.Unit)
			}
			mu.Lock()
			defer mu.Unlock()
			slices.Sort(stopped)
			slices.Sort(spawned)
			return stopped, spawned, slices.Sorted(slices.Values(hashed))
		}
		for _, step := range []struct {
			name, file, content string
			restarted           []string
		}{
			{"an edit of u07", "u07.yaml", "command: [/bin/sleep, \"600\"]\n", []string{"u07"}},
			{"an edit of u01, which dep requires", "u01.yaml", "command: [/bin/sleep, \"600\"]\n", []string{"dep", "u01"}},
			{"dep requires u02 instead (no restart: not hashed)", "dep.yaml", sleep + "requires: [u02]\nafter: [u02]\n", nil},
			{"an edit of u01 again", "u01.yaml", sleep, []string{"u01"}},
			{"an edit of u02, which dep requires now", "u02.yaml", "command: [/bin/sleep, \"600\"]\n", []string{"dep", "u02"}},
		} {
			stopped, spawned, hashedNow := edit(step.file, step.content)
			if !slices.Equal(stopped, step.restarted) || !slices.Equal(spawned, step.restarted) {
				t.Errorf("%s: stopped %v and started %v, want %v", step.name, stopped, spawned, step.restarted)
			}
			if want, _ := units.NameOf(step.file); !slices.Equal(hashedNow, []string{want}) {
				t.Errorf("%s: hashed %v, want [%s]", step.name, hashedNow, want)
			}
		}
	})
}
