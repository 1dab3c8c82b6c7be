package wallclock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// watch waits on a timerfd of CLOCK_REALTIME armed, absolute, ten years
// ahead with TFD_TIMER_CANCEL_ON_SET: it never expires in practice, and
// its read fails with ECANCELED as soon as the clock is set. It is re-armed
// before each report, never after, so no step goes unseen. Where timerfd is missing
// (ENOSYS, seccomp), it falls back to comparing the clocks.
func watch(ctx context.Context, stepped func()) error {
	fd, err := unix.TimerfdCreate(unix.CLOCK_REALTIME, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		return fallback(ctx, stepped, FallbackInterval, wallNow)
	}
	if err != nil {
		return fmt.Errorf("watch the wall clock: timerfd_create: %w", err)
	}
	// Non-blocking, so os.File reads it through the poller: a waiting
	// read parks the goroutine, not a thread, and a deadline ends it.
	f := os.NewFile(uintptr(fd), "timerfd")
	defer f.Close()
	raw, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("watch the wall clock: %w", err)
	}
	// arm arms the timer. The kernel refuses to arm it (ECANCELED) when
	// the clock was set since the last arm, or while this one ran: that
	// is a step too, so arm says so and tries again.
	arm := func() (steppedMeanwhile bool, err error) {
		for {
			var serr error
			if err := raw.Control(func(fd uintptr) {
				at := unix.NsecToTimespec(time.Now().AddDate(10, 0, 0).UnixNano())
				serr = unix.TimerfdSettime(int(fd), unix.TFD_TIMER_ABSTIME|unix.TFD_TIMER_CANCEL_ON_SET,
					&unix.ItimerSpec{Value: at}, nil)
			}); err != nil {
				return steppedMeanwhile, err
			}
			if !errors.Is(serr, unix.ECANCELED) {
				return steppedMeanwhile, serr
			}
			steppedMeanwhile = true
		}
	}
	stop := context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	var buf [8]byte
	if again, err := arm(); err != nil {
		return fmt.Errorf("watch the wall clock: timerfd_settime: %w", err)
	} else if again {
		stepped()
	}
	for {
		_, err := f.Read(buf[:])
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, unix.ECANCELED):
			// The clock was set. Armed again before reporting, and not
			// after: arming clears a cancellation, so a step during
			// stepped would be lost.
			if _, err := arm(); err != nil {
				return fmt.Errorf("watch the wall clock: timerfd_settime: %w", err)
			}
			stepped()
		case err == nil:
			// Ten years passed: arm again.
			again, err := arm()
			if err != nil {
				return fmt.Errorf("watch the wall clock: timerfd_settime: %w", err)
			}
			if again {
				stepped()
			}
		default:
			return fmt.Errorf("watch the wall clock: read timerfd: %w", err)
		}
	}
}
