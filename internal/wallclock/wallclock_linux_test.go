package wallclock

import (
	"context"
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// adjSetOffset and adjNano are ADJ_SETOFFSET and ADJ_NANO of adjtimex(2)
// (not in x/sys): add Time to the wall clock in one step, in nanoseconds.
const (
	adjSetOffset = 0x0100
	adjNano      = 0x2000
)

// stepClock steps the wall clock by d with adjtimex(ADJ_SETOFFSET): an
// offset added in the kernel, so that stepping by d and then by -d leaves
// the clock where it would have been (no time lost between reading and
// setting, as with clock_settime). It needs CAP_SYS_TIME.
func stepClock(d time.Duration) error {
	tx := unix.Timex{Modes: adjSetOffset | adjNano}
	sec, nsec := int64(d/time.Second), int64(d%time.Second)
	if nsec < 0 {
		sec, nsec = sec-1, nsec+int64(time.Second)
	}
	tx.Time = unix.Timeval{Sec: sec, Usec: nsec} // with ADJ_NANO, Usec holds nanoseconds
	_, err := unix.Adjtimex(&tx)
	return err
}

// TestWatchSeesRealSteps steps the real wall clock (the machine is shared:
// by 2 ms, undone at once) forward and back, and waits for Watch to report
// each step, with a deadline. It needs CAP_SYS_TIME; without it, it says
// so and skips, and TestFallback covers the fallback.
func TestWatchSeesRealSteps(t *testing.T) {
	if err := stepClock(0); errors.Is(err, unix.EPERM) {
		t.Skip("stepping the wall clock needs CAP_SYS_TIME (root); TestFallback covers the fallback")
	} else if err != nil {
		t.Fatalf("adjtimex: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	steps := make(chan struct{}, 16)
	armed := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		// Armed once the goroutine reads; a step before that is not
		// ours to see, so the test steps only after Watch has run long
		// enough to arm: it steps again until a report comes.
		close(armed)
		done <- Watch(ctx, func() { steps <- struct{}{} })
	}()
	<-armed
	for _, d := range []time.Duration{2 * time.Millisecond, -2 * time.Millisecond} {
		deadline := time.After(10 * time.Second)
		got := false
		for !got {
			if err := stepClock(d); err != nil {
				t.Fatalf("step the clock by %v: %v", d, err)
			}
			// Undo at once: a step of d then -d is two steps, both seen;
			// the clock ends where it was.
			if err := stepClock(-d); err != nil {
				t.Fatalf("undo the step of %v: %v", d, err)
			}
			select {
			case <-steps:
				got = true
			case <-time.After(100 * time.Millisecond): // not armed yet: step again
			case err := <-done:
				t.Fatalf("Watch returned before a step was reported: %v", err)
			case <-deadline:
				t.Fatalf("no step reported within 10s of stepping by %v", d)
			}
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Watch returned %v after cancel, want context.Canceled", err)
	}
}
