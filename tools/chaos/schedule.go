package main

import (
	"math/rand/v2"
	"time"
)

// Moments: what hermesd is doing when the fault hits.
const (
	momentIdle   = "idle"         // nothing in particular
	momentStorm  = "reload-storm" // unit files rewritten every few ms
	momentSpawn  = "spawn"        // right after a restarted unit's new process appears
	momentLedger = "ledger-write" // a ledger temporary file exists (a write in flight)
	momentStop   = "clean-stop"   // TERM sent; the fault comes a few ms later
)

// Fault kinds.
const (
	faultKill  = "sigkill"
	faultTerm  = "sigterm" // a clean stop, to its end
	faultPanic = "panic"   // SIGUSR2 to the chaos build: a panic in a goroutine
	faultOOM   = "oom"     // memory.max below usage on hermesd's cgroup
	// faultBoth kills hermesd and its death supervisor together (hermesd
	// stopped first, so that it cannot restart the supervisor): nothing
	// kills the owned units then; the next hermesd must end them before it
	// starts its own copies.
	faultBoth = "sigkill+supervisor"
)

// schedule draws every random choice of a run from one seeded source, so
// that a seed replays the same schedule (the machine's timing still varies).
type schedule struct {
	seed int64
	r    *rand.Rand
}

func newSchedule(seed int64) *schedule {
	return &schedule{seed: seed, r: rand.New(rand.NewPCG(uint64(seed), 0x6865726d6573))}
}

func (s *schedule) pick(xs ...string) string { return xs[s.r.IntN(len(xs))] }

// between is a duration in [lo, hi).
func (s *schedule) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(s.r.Int64N(int64(hi-lo)))
}

func (s *schedule) intn(n int) int { return s.r.IntN(n) }

// moment draws the next round's moment and fault; oom only when available.
func (s *schedule) moment(oom bool) (moment, fault string) {
	moment = s.pick(momentIdle, momentStorm, momentSpawn, momentSpawn, momentLedger, momentLedger, momentStop, momentStop)
	if moment == momentStop {
		return moment, "term+" + s.pick(faultKill, faultPanic)
	}
	faults := []string{faultKill, faultKill, faultTerm, faultPanic, faultBoth, faultSupStop}
	if oom {
		faults = append(faults, faultOOM)
	}
	return moment, s.pick(faults...)
}
