package main

import (
	"context"
	"os"
	"runtime/debug"
)

// gcPercent is hermesd's GOGC when the environment sets none.
//
// hermesd spends its life idle with a small live heap (about 1.5 MB with
// 100 units) between bursts of allocation: the start of every unit, a
// reload. The collector lets the heap grow to max(4 MB × GOGC/100,
// live × (1 + GOGC/100)) before it collects, and the scavenger keeps about
// that much (plus 10%) mapped, so at the runtime's GOGC=100 an idle hermesd
// holds 4 MB of heap pages for 1.5 MB of live data. At 50 the goal is
// max(2 MB, 1.5 × live). Measured with 100 idle `sleep` units, three
// hermesds side by side (RssAnon of /proc/PID/status 3m40s after the
// start, a forced collection between): 7.4 MB at 100, 6.8 MB at 100 with
// returnMemory, 6.2 MB at 50 with returnMemory. The price is a collection
// for every 2 MB allocated instead of 4 MB during the bursts.
const gcPercent = 50

// setGCPercent sets the collector to gcPercent unless GOGC is set in the
// environment: the runtime has read it already, and it wins (GOGC=100 is
// the runtime's own default, GOGC=off turns the collector off). GOMEMLIMIT
// is left to the runtime, which reads it too.
func setGCPercent() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

// returnMemory returns to the OS, once started is closed (every unit has
// had its first chance to start: hermesd's READY=1), the heap that the
// start burst used and left free, or nothing if ctx ends first. Without
// it the runtime keeps those pages until a collection (the forced one, 2
// to 3 minutes later when idle) and the scavenger return them, a few at a
// time: wake-ups of an idle hermesd.
func returnMemory(ctx context.Context, started <-chan struct{}) {
	select {
	case <-ctx.Done():
	case <-started:
		debug.FreeOSMemory()
	}
}
