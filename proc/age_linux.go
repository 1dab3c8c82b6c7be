package proc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ClockTicks is USER_HZ, the unit of the times in /proc/PID/stat (start
// time, CPU): 100 on every architecture Go supports.
const ClockTicks = 100

// Age is how long the process named by id has been running: the boot
// clock now (CLOCK_BOOTTIME, which the start time in /proc/PID/stat
// counts from, time suspended included) less its start time, to the
// clock tick. It reads no /proc file, so it costs one system call and
// holds for a process that has exited (its age is then that of its
// start). An identity of another boot, or with no pid, has no age here.
func (id Identity) Age() (time.Duration, error) { return id.AgeAt(ReadAgeClock()) }

// AgeClock is one reading of the clock Age counts from (ReadAgeClock):
// the ages of many processes taken against one reading (AgeAt) cost one
// system call, not one each.
type AgeClock struct {
	now time.Duration // the boot clock
	err error
}

// ReadAgeClock reads the boot clock now.
func ReadAgeClock() AgeClock {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return AgeClock{err: fmt.Errorf("read the boot clock: %w", err)}
	}
	return AgeClock{now: time.Duration(ts.Nano())}
}

// AgeAt is Age, with the clock read in c.
func (id Identity) AgeAt(c AgeClock) (time.Duration, error) {
	if err := id.ageable(); err != nil {
		return 0, err
	}
	if c.err != nil {
		return 0, c.err
	}
	started := time.Duration(id.StartTime) * (time.Second / ClockTicks)
	if started > c.now {
		return 0, fmt.Errorf("process %s: start time after the boot clock's now (%s)", id, c.now)
	}
	return c.now - started, nil
}

// Started is the wall time at which a process with start time start (as
// in Identity.StartTime: clock ticks since boot) started, to the second:
// now less the time since boot (/proc/uptime), plus start. It is the zero
// time when /proc/uptime cannot be read.
func Started(start uint64) time.Time {
	b, err := os.ReadFile(Root + "/uptime")
	if err != nil {
		return time.Time{}
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return time.Time{}
	}
	up, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return time.Time{}
	}
	bootTime := time.Now().Add(-time.Duration(up * float64(time.Second)))
	return bootTime.Add(time.Duration(start) * (time.Second / ClockTicks)).Round(time.Second)
}
