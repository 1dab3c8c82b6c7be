package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Polling bounds for the lock. flock has no timed wait and a blocked flock
// cannot be interrupted from Go (signal handlers restart it), so a waiter
// polls with LOCK_NB: first quickly, so that a short critical section costs
// little extra latency, then at most every maxPoll.
const (
	minPoll = 200 * time.Microsecond
	maxPoll = 2 * time.Millisecond
)

// acquire takes an exclusive flock on path (created 0600 if missing) within
// timeout. The returned func releases it and closes the file. On timeout the
// error wraps ErrLocked; when ctx ends first, ctx's error.
func acquire(ctx context.Context, path string, timeout time.Duration) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	deadline := time.Now().Add(timeout)
	wait := minPoll
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() {
				_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		left := time.Until(deadline)
		if left <= 0 {
			f.Close()
			return nil, fmt.Errorf("%w: %s still held after %v; another hermes process is writing or stuck (find it with: fuser %s)", ErrLocked, path, timeout, path)
		}
		d := min(wait, left)
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-timer.C:
		}
		wait = min(wait*2, maxPoll)
	}
}
