package proc

import (
	"fmt"
	"time"
)

// Age is how long the process named by id has been running: the wall
// clock now less its start time (p_starttime, microseconds since the
// epoch), to the microsecond. A step of the wall clock since the process
// started moves its age by as much: darwin's table has no start time on a
// clock that does not step. It reads nothing and holds for a process that
// has exited. An identity of another boot, or with no pid, has no age here.
func (id Identity) Age() (time.Duration, error) { return id.AgeAt(ReadAgeClock()) }

// AgeClock is one reading of the clock Age counts from (ReadAgeClock),
// for the ages of many processes taken against one reading (AgeAt).
type AgeClock struct{ now time.Time }

// ReadAgeClock reads the wall clock now.
func ReadAgeClock() AgeClock { return AgeClock{now: time.Now()} }

// AgeAt is Age, with the clock read in c.
func (id Identity) AgeAt(c AgeClock) (time.Duration, error) {
	if err := id.ageable(); err != nil {
		return 0, err
	}
	started := time.UnixMicro(int64(id.StartTime))
	if started.After(c.now) {
		return 0, fmt.Errorf("process %s: start time after the clock's now (%s)", id, c.now.Format(time.RFC3339Nano))
	}
	return c.now.Sub(started), nil
}

// Started is the wall time at which a process with start time start (as
// in Identity.StartTime: microseconds since the epoch) started, to the
// second.
func Started(start uint64) time.Time {
	return time.UnixMicro(int64(start)).Round(time.Second)
}
