package reconciler

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/hermes-units/hermes/units"
)

// TestOnePassForWaitingEvents: events that wait while Run is busy are
// handled together, then one pass looks at the units, not a pass per
// event (each pass looks at every unit: a stop of n units, whose exits,
// stops' ends and empty groups are events, made n passes of n units).
// Run is held in a control call while n events queue (timers of an
// earlier run, which change nothing); once it is let go, they take one
// pass, beside the one after the call.
func TestOnePassForWaitingEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 48 // below the events queue's capacity: every event waits in it
		h := start(t, units.RoleGateway, spec("a"))
		synctest.Wait()
		hold, held := make(chan struct{}), make(chan int, 1)
		go func() { // joined by the receive from held
			if err := h.r.do(context.Background(), func(context.Context) {
				<-hold
				held <- h.r.pace.passes
			}); err != nil {
				t.Error(err)
			}
		}()
		synctest.Wait() // Run is in the call
		for range n {
			h.r.post(timerEvent{name: "a", gen: 0, kind: timerBackoff})
		}
		close(hold)
		before := <-held
		synctest.Wait()
		var after int
		if err := h.r.do(context.Background(), func(context.Context) { after = h.r.pace.passes }); err != nil {
			t.Fatal(err)
		}
		if passes := after - before; passes > 2 {
			t.Errorf("%d events waiting took %d passes, want 2 (one after the call, one for the events)", n, passes)
		}
		if st := h.unit("a").State; st != "running" {
			t.Errorf("a is %s, want running", st)
		}
		h.shutdown()
	})
}
