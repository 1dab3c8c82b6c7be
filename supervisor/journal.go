package supervisor

import (
	"context"
	"sync"
	"time"

	"github.com/hermes-units/hermes/ledger"
)

// journal is an owner's only writer to the ledger. Every ledger change the
// owner makes (a spawn's entry, Release's mark, Own's adoption, the removal
// of an empty group's entry) is an op queued here; one goroutine applies
// the queued ops in queue order, all of them in one ledger Update: one lock,
// one read, one fsync for many changes (group commit). Spawning is then not
// paced by the ledger's write latency, and concurrent owners hold the
// ledger lock less often.
//
// Queue order is the order of the ledger: an op queued after another is
// applied after it, in the same Update or a later one. So an entry removed
// (or marked) after it was queued, even before it was written, is never
// written in its stale form afterwards.
//
// Callers choose whether to wait: do waits for the Update that carries the
// op and returns its error; post does not (an owned spawn's record, see
// SpawnOwned). An op that waits is written at once (after the write in
// progress, if any). Ops that nobody waits for are written at once too when
// the journal was idle; after a write, they wait until gatherTimes as long
// as that write took (at least postWindow, at most maxGather) has passed
// since it ended, gathering what comes meanwhile. Each write reads, prunes
// (a look at every entry's processes) and rewrites the whole ledger, so
// that a write's cost grows with the entries: in a burst of spawns, writes
// back to back kept a core busy beside the spawns, and with a gathering as
// long as the write (at most 100 ms) the writer still worked half the
// time, and more once a write of thousands of entries took longer than
// that (13% of hermesd's CPU over a start of 5000 units). Now it works
// about a quarter of the time at most, up to writes of a third of
// maxGather. A post op whose Update failed
// (a full disk, a stuck lock) is
// kept, in memory, and retried with backoff until the ledger can be
// written again: a record is never dropped while its owner lives. The
// backlog is bounded: past maxBacklog ops, full reports it, and SpawnOwned
// waits for its record instead (failing the spawn with the ledger's error).
// While records wait, backlog says how many and why (status shows it, and
// each failed write is logged). A do op fails with the error and is not
// retried (its caller has the error). Close drains what it can within
// closeDrain, then says what it could not write.
type journal struct {
	led  *ledger.Ledger
	logf func(format string, args ...any)
	ctx  context.Context // for Updates: not cancelled; the ledger bounds its lock wait itself

	// update is the ledger write (led.Update; tests inject failures).
	update func(ctx context.Context, fn func([]ledger.Entry) ([]ledger.Entry, error)) error

	mu      sync.Mutex
	queue   []*jop // guarded by mu
	failing int    // guarded by mu; consecutive failed Updates
	lastErr error  // guarded by mu; the last Update's error, nil once one succeeded
	// held, when set (tests), runs in the writer after it took a batch and
	// before it writes it. Guarded by mu.
	held func()

	waiters int // guarded by mu; queued ops whose caller waits (do)

	wake   chan struct{} // buffered(1): ops were queued
	urgent chan struct{} // buffered(1): an op whose caller waits was queued
	stop   chan struct{} // closed by close: drain and return
	done   chan struct{} // closed when run returned
	// next is when ops nobody waits for may be written again (see gather);
	// only the writer (run) uses it.
	next time.Time
}

// jop is one queued ledger change.
type jop struct {
	apply    func([]ledger.Entry) []ledger.Entry
	result   chan error // buffered(1); nil for post ops
	attempts int        // failed Updates so far (post ops)
}

const (
	maxBacklog   = 4096
	postWindow   = 10 * time.Millisecond  // see journal: the least gathering of ops nobody waits for
	gatherTimes  = 3                      // the gathering after a write, in times the write took
	maxGather    = time.Second            // the most (a write that waited for the lock took long, not worked long)
	journalRetry = 200 * time.Millisecond // first retry; doubles up to maxRetry
	maxRetry     = 2 * time.Second
	closeDrain   = 5 * time.Second
)

// newJournal starts the writer of led; close stops it.
func newJournal(ctx context.Context, led *ledger.Ledger, logf func(string, ...any)) *journal {
	j := makeJournal(ctx, led, logf)
	go j.run()
	return j
}

// makeJournal makes a journal whose writer is not started yet.
func makeJournal(ctx context.Context, led *ledger.Ledger, logf func(string, ...any)) *journal {
	return &journal{led: led, logf: logf, ctx: context.WithoutCancel(ctx), update: led.Update,
		wake: make(chan struct{}, 1), urgent: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// post queues apply and returns at once.
func (j *journal) post(apply func([]ledger.Entry) []ledger.Entry) {
	j.enqueue(&jop{apply: apply})
}

// do queues apply and waits for the Update that carries it (and every op
// queued before it). When ctx ends first it returns ctx's error; the op
// stays queued and is still applied.
func (j *journal) do(ctx context.Context, apply func([]ledger.Entry) []ledger.Entry) error {
	op := &jop{apply: apply, result: make(chan error, 1)}
	if !j.enqueue(op) {
		return ErrClosed
	}
	select {
	case err := <-op.result:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// enqueue adds op and wakes the writer; false once the journal is closed.
func (j *journal) enqueue(op *jop) bool {
	j.mu.Lock()
	select {
	case <-j.stop:
		j.mu.Unlock()
		return false
	default:
	}
	j.queue = append(j.queue, op)
	if op.result != nil {
		j.waiters++
	}
	j.mu.Unlock()
	nudge(j.wake)
	if op.result != nil {
		nudge(j.urgent)
	}
	return true
}

// full reports whether the backlog reached maxBacklog: a record posted now
// could not be kept.
func (j *journal) full() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.queue) >= maxBacklog
}

// backlog reports the ops that wait because the ledger cannot be written,
// and why; 0 and nil while writes succeed.
func (j *journal) backlog() (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.lastErr == nil {
		return 0, nil
	}
	return len(j.queue), j.lastErr
}

// close applies what is queued, stops the writer and joins it. Ops queued
// afterwards are refused (do returns ErrClosed, post drops them).
func (j *journal) close() {
	j.mu.Lock()
	select {
	case <-j.stop:
	default:
		close(j.stop)
	}
	j.mu.Unlock()
	<-j.done
}

// run is the writer, started by newJournal and joined by close.
func (j *journal) run() {
	defer close(j.done)
	for {
		select {
		case <-j.wake:
			j.gather()
			if j.flush() {
				if !j.pause() {
					j.drain()
					return
				}
			}
		case <-j.stop:
			j.drain()
			return
		}
	}
}

// gather waits, before a write of ops nobody waits for, until next (see
// journal); an op whose caller waits, or close, ends the wait at once.
func (j *journal) gather() {
	d := time.Until(j.next)
	j.mu.Lock()
	waiters := j.waiters
	j.mu.Unlock()
	if d <= 0 || waiters > 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-j.urgent:
	case <-j.stop:
	}
}

// drain is the writer's last work, at close: what is queued is written,
// retried while it fails, for at most closeDrain; what is still not
// written then is dropped, and said.
func (j *journal) drain() {
	end := time.Now().Add(closeDrain)
	for j.flush() && time.Now().Before(end) {
		time.Sleep(journalRetry)
	}
	j.mu.Lock()
	n, err := len(j.queue), j.lastErr
	j.queue = nil
	j.mu.Unlock()
	if n > 0 {
		j.logf("supervisor: %d ledger records not written at close: %v", n, err)
	}
}

// pause waits before a retry, longer after each failure in a row (the
// ledger was locked or failed: give it a moment), and re-arms the
// wake-up. It returns false when close came meanwhile.
func (j *journal) pause() bool {
	j.mu.Lock()
	d := min(journalRetry<<min(max(j.failing-1, 0), 8), maxRetry)
	j.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-j.stop:
		return false
	}
	nudge(j.wake)
	return true
}

// flush applies every queued op in one Update and reports whether post ops
// were put back for a retry.
func (j *journal) flush() (retry bool) {
	j.mu.Lock()
	ops, held := j.queue, j.held
	j.queue, j.waiters = nil, 0
	j.mu.Unlock()
	if len(ops) == 0 {
		return false
	}
	began := time.Now()
	defer func() { j.next = time.Now().Add(min(max(gatherTimes*time.Since(began), postWindow), maxGather)) }()
	if held != nil {
		held()
	}
	err := j.update(j.ctx, func(es []ledger.Entry) ([]ledger.Entry, error) {
		for _, op := range ops {
			es = op.apply(es)
		}
		return es, nil
	})
	var again []*jop
	for _, op := range ops {
		if op.result != nil {
			op.result <- err
			continue
		}
		if err != nil {
			op.attempts++
			again = append(again, op)
		}
	}
	j.mu.Lock()
	failed := j.failing
	if err != nil {
		j.failing++
		j.lastErr = err
		j.queue = append(again, j.queue...)
	} else {
		j.failing, j.lastErr = 0, nil
	}
	waiting := len(j.queue)
	j.mu.Unlock()
	switch {
	case err != nil:
		j.logf("supervisor: ledger write of %d changes failed (%d in a row): %v; %d records wait in memory and are retried", len(ops), failed+1, err, waiting)
	case failed > 0:
		j.logf("supervisor: ledger written again after %d failed writes; the records that waited are on disk", failed)
	}
	return len(again) > 0
}
