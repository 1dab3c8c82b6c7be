package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Waiting for the lock. flock has no timed wait, and a blocked flock cannot
// be interrupted from Go (the runtime's signal handlers restart it). A
// blocked flock is woken by the kernel the moment the lock is released,
// which keeps waiters from being starved by a writer that re-takes the lock
// at once (a polling waiter usually misses the short free window). So a
// waiter blocks in flock on a goroutine and waits for it up to the timeout;
// when it gives up, that goroutine is abandoned: it finishes on its own when
// flock returns, releasing the lock at once if it got it.
//
// Abandoned goroutines each hold an OS thread while a stuck writer holds
// the lock, so a Ledger keeps at most maxAbandoned of them; past that, a
// waiter polls with LOCK_NB instead.
const (
	maxAbandoned = 4
	minPoll      = 200 * time.Microsecond
	maxPoll      = 2 * time.Millisecond
)

// acquire takes an exclusive flock on l.lock within timeout. The returned
// func releases it and closes the file. On timeout the error wraps
// ErrLocked; when ctx ends first, it is ctx's error.
func (l *Ledger) acquire(ctx context.Context, timeout time.Duration) (func(), error) {
	f, err := os.OpenFile(l.lock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	fd := int(f.Fd())
	release := func() {
		_ = unix.Flock(fd, unix.LOCK_UN)
		f.Close()
	}
	// Fast path: the lock is free.
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err == nil {
		return release, nil
	} else if !errors.Is(err, unix.EWOULDBLOCK) {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", l.lock, err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	l.mu.Lock()
	block := l.abandoned < maxAbandoned
	l.mu.Unlock()
	if !block {
		return l.poll(ctx, f, release, timer.C, timeout)
	}
	got := make(chan error)        // unbuffered: the hand-over of the lock
	abandon := make(chan struct{}) // closed when the waiter gives up
	go func() {
		err := flockRetry(fd)
		select {
		case got <- err:
		case <-abandon:
			if err == nil {
				_ = unix.Flock(fd, unix.LOCK_UN)
			}
			f.Close()
			l.mu.Lock()
			l.abandoned--
			l.mu.Unlock()
		}
	}()
	giveUp := func() {
		l.mu.Lock()
		l.abandoned++
		l.mu.Unlock()
		close(abandon)
	}
	select {
	case err := <-got:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", l.lock, err)
		}
		return release, nil
	case <-timer.C:
		giveUp()
		return nil, l.lockedError(timeout)
	case <-ctx.Done():
		giveUp()
		return nil, ctx.Err()
	}
}

// flockRetry takes the lock, blocking, retrying on EINTR.
func flockRetry(fd int) error {
	for {
		err := unix.Flock(fd, unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// poll takes the lock by polling with LOCK_NB until expired fires.
func (l *Ledger) poll(ctx context.Context, f *os.File, release func(), expired <-chan time.Time, timeout time.Duration) (func(), error) {
	wait := minPoll
	tick := time.NewTimer(wait)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-expired:
			f.Close()
			return nil, l.lockedError(timeout)
		case <-tick.C:
		}
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return release, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", l.lock, err)
		}
		wait = min(wait*2, maxPoll)
		tick.Reset(wait)
	}
}

func (l *Ledger) lockedError(timeout time.Duration) error {
	return fmt.Errorf("%w: %s still held after %v; another hermes process is writing or stuck (find it with: fuser -v %s)", ErrLocked, l.lock, timeout, l.lock)
}
