package testkit

import (
	"runtime"
	"testing"
	"time"
)

// Poll is the pause between two checks of a polled condition: short enough
// that a test does not wait long past the moment the condition holds, long
// enough not to take a core from the processes under test.
const Poll = 10 * time.Millisecond

// Within reports whether cond holds within d. It checks cond at once, then
// every Poll, and once more when d has passed, so that a condition that
// holds at the deadline counts. It is for what the kernel or the code under
// test gives no event for (another process's death, a group's end, a state
// seen only by asking); where a channel says when to look, EventuallyOn
// waits on it instead.
func Within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(Poll)
	}
}

// Eventually fails t at once (Fatalf) unless cond holds within d, as Within
// checks it. what names the condition in the failure: "web running".
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Within(d, cond) {
		t.Fatalf("still not %s after %v", what, d)
	}
}

// EventuallyOK fails t at once (Fatalf) unless check returns nil within d,
// as Within checks it; the failure shows check's last error, which says
// what was waited for and what was seen instead.
func EventuallyOK(t testing.TB, d time.Duration, check func() error) {
	t.Helper()
	var last error
	if !Within(d, func() bool { last = check(); return last == nil }) {
		t.Fatalf("after %v: %v", d, last)
	}
}

// EventuallyOn fails t at once (Fatalf) unless cond holds within d,
// checking it first and then after each value received from wake (an
// event, a notification): no polling. wake closed with cond still false
// fails t, since nothing would say when to look again.
func EventuallyOn[T any](t testing.TB, d time.Duration, what string, wake <-chan T, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for !cond() {
		select {
		case _, ok := <-wake:
			if !ok {
				if !cond() {
					t.Fatalf("still not %s when its notifications ended", what)
				}
				return
			}
		case <-deadline.C:
			if !cond() {
				t.Fatalf("still not %s after %v", what, d)
			}
			return
		}
	}
}

// Receive returns the next value from ch (a goroutine's result, an exit,
// a closed channel's zero value) and fails t at once (Fatalf with format
// and args) if none comes within d.
func Receive[T any](t testing.TB, d time.Duration, ch <-chan T, format string, args ...any) T {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	select {
	case v := <-ch:
		return v
	case <-deadline.C:
		t.Fatalf(format, args...)
		var zero T
		return zero
	}
}

// Ready returns what ch holds now, and true, without waiting: false (and
// the zero value) when nothing is there yet, true for a closed ch. A test
// asks it to check that something has not happened (a call returned, a
// run released) before it lets that happen, or that it has.
func Ready[T any](ch <-chan T) (T, bool) {
	select {
	case v := <-ch:
		return v, true
	default:
		var zero T
		return zero, false
	}
}

// SettledGoroutines is the number of goroutines once it has held still
// for five Polls in a row (the goroutines of what just happened end after
// it), or what it is after 10 s.
func SettledGoroutines() int {
	last, still := runtime.NumGoroutine(), 0
	for end := time.Now().Add(10 * time.Second); still < 5 && time.Now().Before(end); {
		time.Sleep(Poll)
		if n := runtime.NumGoroutine(); n == last {
			still++
		} else {
			last, still = n, 0
		}
	}
	return last
}
