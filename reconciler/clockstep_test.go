package reconciler

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-units/hermes/units"
)

// stepClock is a wall clock the test steps: the bubble's time plus an
// offset, and a channel that reports each step as wallclock.Watch would.
type stepClock struct {
	offset atomic.Int64
	steps  chan struct{}
	watch  atomic.Int32 // watchers started
}

func (c *stepClock) now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// step moves the wall clock by d; with report, the watcher says so.
func (c *stepClock) step(d time.Duration, report bool) {
	c.offset.Add(int64(d))
	if report {
		c.steps <- struct{}{}
	}
}

func (c *stepClock) watchSteps(ctx context.Context, stepped func()) error {
	c.watch.Add(1)
	for {
		select {
		case <-c.steps:
			stepped()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// startClocked is start (fake_test.go) with the stepped clock.
func startClocked(t *testing.T, c *stepClock, specs ...units.Spec) *harness {
	t.Helper()
	h := newHarness(t, specs...)
	o := h.options(units.RoleGateway)
	o.WallClock, o.ClockSteps = c.now, c.watchSteps
	h.run(New(o))
	return h
}

// runs counts the job's spawns, ending each run at once (a run still
// going would make the next fire a skip).
func runs(t *testing.T, h *harness, name string) int {
	t.Helper()
	n := len(h.fs.spawnTimes(name))
	if n > 0 {
		h.fs.last(t, name).exit(nil)
		synctest.Wait()
	}
	return n
}

// TestScheduleSurvivesClockSteps: a job's schedule follows the wall clock
// through steps, back and forward. A */5 job starts at 00:00 (its next
// fire 00:05); one minute in, the wall clock steps. Stepped back 7
// minutes (to 23:54), it fires at 23:55, a minute later, not once the
// seven minutes are waited out (today's main fired it 11 minutes later);
// stepped forward 7 minutes (to 00:08), the 00:05 fire that was passed
// over runs at once, and the next at 00:10, two minutes later.
func TestScheduleSurvivesClockSteps(t *testing.T) {
	job := spec("job", func(s *units.Spec) { s.Schedule = "*/5 * * * *" })
	for _, tc := range []struct {
		name  string
		step  time.Duration
		after []time.Duration // time after the step by which one more run has happened
	}{
		{"step back 7m", -7 * time.Minute, []time.Duration{time.Minute, 6 * time.Minute}},
		{"step forward 7m", 7 * time.Minute, []time.Duration{0, 2 * time.Minute, 7 * time.Minute}},
		{"back 10m and restored", -10 * time.Minute, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := &stepClock{steps: make(chan struct{})}
				h := startClocked(t, c, job)
				synctest.Wait()
				time.Sleep(time.Minute) // 00:01
				synctest.Wait()
				if n := runs(t, h, "job"); n != 0 {
					t.Fatalf("%d runs before the first fire, want 0", n)
				}
				if c.watch.Load() != 1 {
					t.Fatalf("clock watcher started %d times with a job declared, want 1", c.watch.Load())
				}
				c.step(tc.step, true)
				synctest.Wait()
				if tc.after == nil { // restored right away: back on the original schedule
					c.step(-tc.step, true)
					synctest.Wait()
					tc.after = []time.Duration{4 * time.Minute, 9 * time.Minute}
				}
				start := time.Now()
				for i, at := range tc.after {
					// No run before its time (a second early), one by then.
					for _, check := range []struct {
						at   time.Duration
						want int
					}{{at - time.Second, i}, {at + time.Millisecond, i + 1}} {
						if check.at < time.Since(start) {
							continue
						}
						time.Sleep(check.at - time.Since(start))
						synctest.Wait()
						if n := len(h.fs.spawnTimes("job")); n != check.want {
							t.Fatalf("%v after the step (wall %s): %d runs, want %d", check.at, c.now().Format("15:04:05"), n, check.want)
						}
					}
					h.fs.last(t, "job").exit(nil)
					synctest.Wait()
				}
			})
		})
	}
}

// TestScheduleBackstopWithoutWatcher: with no watcher (or one that
// failed), a step back is noticed when the armed timer fires with nothing
// due, and the schedule follows the new time from there rather than
// waiting the step out.
func TestScheduleBackstopWithoutWatcher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &stepClock{steps: make(chan struct{})}
		h := startClocked(t, c, spec("job", func(s *units.Spec) { s.Schedule = "*/5 * * * *" }))
		synctest.Wait()
		time.Sleep(time.Minute) // 00:01, next fire 00:05
		c.step(-7*time.Minute, false)
		// The timer fires at 00:05 monotonic (wall 23:58), nothing due:
		// re-armed for 00:00 wall, two minutes later (today's main waited
		// for 00:05 wall, seven).
		time.Sleep(6*time.Minute + time.Millisecond)
		synctest.Wait()
		if n := len(h.fs.spawnTimes("job")); n != 1 {
			t.Fatalf("wall %s: %d runs, want 1", c.now().Format("15:04:05"), n)
		}
	})
}
