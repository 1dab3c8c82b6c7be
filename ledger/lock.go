package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/internal/safefile"
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

// acquire takes an exclusive flock on l.lock within timeout, in turn (see
// queue.go). The returned func releases it and closes the file. On timeout
// the error wraps ErrLocked; when ctx ends first, it is ctx's error.
func (l *Ledger) acquire(ctx context.Context, timeout time.Duration) (func(), error) {
	expired := time.NewTimer(timeout)
	defer expired.Stop()
	t := l.enqueue()
	f, err := l.openLock()
	if err != nil {
		t.leave()
		return nil, err
	}
	// Fast path: nobody is ahead in line and the lock is free.
	if !t.behind() {
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err == nil {
			return l.held(f, t), nil
		} else if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			t.leave()
			return nil, fmt.Errorf("lock %s: %w", l.lock, err)
		}
	}
	l.mu.Lock()
	block := l.abandoned < maxAbandoned
	l.mu.Unlock()
	if !block {
		t.leave() // a poller cannot keep its place in line
		return l.poll(ctx, f, t, expired.C, timeout, false)
	}
	// The waiter goroutine owns f and its own descriptor of the queue file
	// (wait); the ticket stays with the caller, which drops it at once when
	// it gives up, so that those behind move on while the waiter may still
	// be blocked.
	wait := t.waitFile()
	got := make(chan error)        // unbuffered: the hand-over of the lock
	abandon := make(chan struct{}) // closed when the caller gives up
	go func() {
		t.waitAhead(wait)
		err := flockRetry(int(f.Fd()))
		select {
		case got <- err:
		case <-abandon:
			if err == nil {
				_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
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
	// A writer ahead in line that is stopped (SIGSTOP, a debugger) would
	// hold up the line while the flock is free: after linePatience the
	// caller polls for the flock itself, keeping its ticket so that those
	// behind still follow it. It still gives the writer ahead its turn
	// while that one may take it (see poll): a line that waits for a
	// writer holding the flock long (a loaded machine) keeps its order.
	var impatient <-chan time.Time
	if wait != nil {
		p := time.NewTimer(linePatience)
		defer p.Stop()
		impatient = p.C
	}
	select {
	case err := <-got:
		if err != nil {
			f.Close()
			t.leave()
			return nil, fmt.Errorf("lock %s: %w", l.lock, err)
		}
		return l.held(f, t), nil
	case <-impatient:
		giveUp()
		f2, err := l.openLock()
		if err != nil {
			t.leave()
			return nil, err
		}
		return l.poll(ctx, f2, t, expired.C, timeout, true)
	case <-expired.C:
		giveUp()
		t.leave()
		return nil, l.lockedError(timeout)
	case <-ctx.Done():
		giveUp()
		t.leave()
		return nil, ctx.Err()
	}
}

// linePatience bounds the wait for the writer ahead in line (see acquire).
const linePatience = 250 * time.Millisecond

// openLock opens the lock file. A directory in its place (nothing can lock
// it, and every write would fail) is repaired as a bad ledger.json is: moved
// aside as ledger.lock.corrupt-<time>, content intact, and a fresh lock file
// made.
func (l *Ledger) openLock() (*os.File, error) {
	f, err := safefile.OpenFile(l.lock, os.O_RDWR|os.O_CREATE, 0o600)
	if errors.Is(err, syscall.EISDIR) {
		// The trailing slash makes the rename fail (ENOTDIR) unless the
		// name is still a directory: a writer that lost the race never
		// moves aside the fresh lock file another one just made, which
		// would leave two writers locking two files.
		aside := fmt.Sprintf("%s.corrupt-%s", l.lock, time.Now().UTC().Format("20060102T150405.000000000Z"))
		if rerr := os.Rename(l.lock+"/", aside); rerr != nil && !errors.Is(rerr, syscall.ENOTDIR) && !errors.Is(rerr, os.ErrNotExist) {
			return nil, fmt.Errorf("open lock file: %s is a directory and could not be moved aside: %w", l.lock, rerr)
		}
		f, err = safefile.OpenFile(l.lock, os.O_RDWR|os.O_CREATE, 0o600)
	}
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	return f, nil
}

// held is the release of a lock taken on f by the writer holding ticket t.
// It empties a queue file that grew too long first, while it still holds
// the flock.
func (l *Ledger) held(f *os.File, t *ticket) func() {
	return func() {
		t.reset()
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
		t.leave() // after the flock: the next in line finds it free
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

// poll takes the lock on f by polling with LOCK_NB until expired fires.
// It owns f and t: it closes and drops them unless it returns the release.
// With line, it keeps its place behind the ticket ahead as long as the
// line moves: a flock found free while the writer ahead has not taken it
// is let go again (that writer, blocked in flock, takes it), until it has
// been seen free for linePatience in a row: the writer ahead is stuck, and
// loses its turn.
func (l *Ledger) poll(ctx context.Context, f *os.File, t *ticket, expired <-chan time.Time, timeout time.Duration, line bool) (func(), error) {
	fail := func(err error) (func(), error) {
		f.Close()
		t.leave()
		return nil, err
	}
	wait := minPoll
	tick := time.NewTimer(wait)
	defer tick.Stop()
	var freeSince time.Time // when the flock was first seen free with the writer ahead still in line
	for {
		select {
		case <-ctx.Done():
			return fail(ctx.Err())
		case <-expired:
			return fail(l.lockedError(timeout))
		case <-tick.C:
		}
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil && (!line || !t.behind()):
			return l.held(f, t), nil
		case err == nil:
			if freeSince.IsZero() {
				freeSince = time.Now()
			}
			if time.Since(freeSince) >= linePatience {
				return l.held(f, t), nil
			}
			_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		case errors.Is(err, unix.EWOULDBLOCK) || errors.Is(err, unix.EINTR):
			freeSince = time.Time{} // held: the line moves, or a writer holds it long
		default:
			return fail(fmt.Errorf("lock %s: %w", l.lock, err))
		}
		wait = min(wait*2, maxPoll)
		tick.Reset(wait)
	}
}

func (l *Ledger) lockedError(timeout time.Duration) error {
	return fmt.Errorf("%w: %s still held after %v; another hermes process is writing or stuck (find it with: fuser -v %s)", ErrLocked, l.lock, timeout, l.lock)
}
