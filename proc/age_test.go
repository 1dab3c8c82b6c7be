//go:build linux

package proc

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const tick = time.Second / ClockTicks

// bootNow is the boot clock now, in clock ticks.
func bootNow(t *testing.T) uint64 {
	t.Helper()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		t.Fatal(err)
	}
	return uint64(time.Duration(ts.Nano()) / tick)
}

// TestAgeOfAChild: a process started during the test is no older than the
// time since the test began (to the tick the start time is rounded down to).
func TestAgeOfAChild(t *testing.T) {
	began := time.Now()
	c := start(t, nil, nil)
	id, err := Read(c.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	age, err := id.Age()
	elapsed := time.Since(began)
	if err != nil {
		t.Fatalf("Age: %v", err)
	}
	if age < 0 || age > elapsed+tick {
		t.Errorf("age %v, want between 0 and %v (since the test began, plus a tick)", age, elapsed+tick)
	}
}

func TestAge(t *testing.T) {
	boot, err := BootID()
	if err != nil {
		t.Fatal(err)
	}
	hour := uint64(time.Hour / tick)
	for _, tc := range []struct {
		name    string
		id      func() Identity
		min     time.Duration
		wantErr bool
	}{
		{"an hour old", func() Identity { return Identity{PID: 42, StartTime: bootNow(t) - hour, BootID: boot} }, time.Hour, false},
		{"no boot id: this boot's", func() Identity { return Identity{PID: 42, StartTime: bootNow(t) - hour} }, time.Hour, false},
		{"no pid", func() Identity { return Identity{StartTime: 1} }, 0, true},
		{"another boot", func() Identity { return Identity{PID: 42, StartTime: 1, BootID: "not-" + boot} }, 0, true},
		{"started after now", func() Identity { return Identity{PID: 42, StartTime: bootNow(t) + hour} }, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			began := time.Now()
			age, err := tc.id().Age()
			if tc.wantErr {
				if err == nil {
					t.Errorf("got age %v, want an error", age)
				}
				return
			}
			if err != nil {
				t.Fatalf("Age: %v", err)
			}
			if max := tc.min + time.Since(began) + tick; age < tc.min || age > max {
				t.Errorf("got age %v, want between %v and %v", age, tc.min, max)
			}
		})
	}
}

// TestAgeAtOneReading: ages taken against one reading of the clock
// (AgeAt) differ by exactly the difference of the start times, and agree
// with Age read around them.
func TestAgeAtOneReading(t *testing.T) {
	hour := uint64(time.Hour / tick)
	now := bootNow(t)
	young, old := Identity{PID: 42, StartTime: now - 1}, Identity{PID: 43, StartTime: now - hour}
	before, err := young.Age()
	if err != nil {
		t.Fatal(err)
	}
	c := ReadAgeClock()
	after, err := young.Age()
	if err != nil {
		t.Fatal(err)
	}
	y, err := young.AgeAt(c)
	if err != nil {
		t.Fatalf("AgeAt: %v", err)
	}
	o, err := old.AgeAt(c)
	if err != nil {
		t.Fatalf("AgeAt: %v", err)
	}
	if got := o - y; got != time.Hour-tick {
		t.Errorf("got ages %v apart, want %v (their start times')", got, time.Hour-tick)
	}
	if y < before || y > after {
		t.Errorf("got age %v against the reading, want between Age before it (%v) and after (%v)", y, before, after)
	}
	if _, err := (Identity{StartTime: 1}).AgeAt(c); err == nil {
		t.Error("AgeAt of an identity with no pid: got an age, want an error")
	}
}

// TestStarted: this test process started within the last minute, to the
// second Started rounds to.
func TestStarted(t *testing.T) {
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	got, now := Started(self.StartTime), time.Now()
	if got.Before(now.Add(-time.Minute)) || got.After(now.Add(time.Second)) {
		t.Errorf("Started(own start time): got %v, want within the minute before %v", got, now)
	}
}
