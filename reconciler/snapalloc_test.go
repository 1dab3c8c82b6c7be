package reconciler

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"testing/synctest"
	"unsafe"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/units"
)

// TestStatusBuildAllocs: a status snapshot of n units allocates its rows
// once, not again at each growth of their slice: while statuses are
// asked, Run builds one every 50 ms or so, and with thousands of units
// each copy of the rows is megabytes of garbage.
func TestStatusBuildAllocs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 2000
		fs := &files{specs: map[string]units.Spec{}}
		for i := range n {
			name := fmt.Sprintf("u%04d", i)
			fs.specs[name] = spec(name)
		}
		r := runOver(t, &fakeSpawner{fail: map[string]error{}}, fs)
		synctest.Wait()
		var per uint64
		if err := r.call(t.Context(), false, func(context.Context) {
			r.buildStatus() // the first one sizes what it may keep
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			r.buildStatus()
			runtime.ReadMemStats(&after)
			per = (after.TotalAlloc - before.TotalAlloc) / n
		}); err != nil {
			t.Fatal(err)
		}
		row := uint64(unsafe.Sizeof(control.Unit{}) + unsafe.Sizeof(liveRow{}))
		t.Logf("%d bytes a unit (a row and its live part: %d)", per, row)
		if per > row*3/2 {
			t.Errorf("a snapshot of %d units allocated %d bytes a unit, want under 1.5 times a row and its live part (%d): the rows are copied as their slice grows", n, per, row)
		}
	})
}
