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
// SpawnOwned). A post op whose Update failed is kept and retried, up to
// maxAttempts, then dropped with a log line; a do op fails with the error
// and is not retried (its caller has the error).
type journal struct {
	led  *ledger.Ledger
	logf func(format string, args ...any)
	ctx  context.Context // for Updates: not cancelled; the ledger bounds its lock wait itself

	mu    sync.Mutex
	queue []*jop // guarded by mu
	// held, when set (tests), runs in the writer after it took a batch and
	// before it writes it. Guarded by mu.
	held func()

	wake chan struct{} // buffered(1): ops were queued
	stop chan struct{} // closed by close: drain and return
	done chan struct{} // closed when run returned
}

// jop is one queued ledger change.
type jop struct {
	apply    func([]ledger.Entry) []ledger.Entry
	result   chan error // buffered(1); nil for post ops
	attempts int        // failed Updates so far (post ops)
}

const (
	maxAttempts  = 5
	journalRetry = 200 * time.Millisecond
)

// newJournal starts the writer of led; close stops it.
func newJournal(ctx context.Context, led *ledger.Ledger, logf func(string, ...any)) *journal {
	j := makeJournal(ctx, led, logf)
	go j.run()
	return j
}

// makeJournal makes a journal whose writer is not started yet.
func makeJournal(ctx context.Context, led *ledger.Ledger, logf func(string, ...any)) *journal {
	return &journal{led: led, logf: logf, ctx: context.WithoutCancel(ctx),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
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

// sync waits until every op queued before the call has been applied.
func (j *journal) sync(ctx context.Context) error {
	return j.do(ctx, func(es []ledger.Entry) []ledger.Entry { return es })
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
	j.mu.Unlock()
	select {
	case j.wake <- struct{}{}:
	default:
	}
	return true
}

// queued reports how many ops wait for the writer (tests).
func (j *journal) queued() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.queue)
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
			if j.flush() {
				j.pause()
			}
		case <-j.stop:
			for j.flush() { // drain, retrying post ops as long as they may be
				j.pause()
			}
			return
		}
	}
}

// pause waits before a retry (the ledger was locked or failed: give it a
// moment) and re-arms the wake-up.
func (j *journal) pause() {
	time.Sleep(journalRetry)
	select {
	case j.wake <- struct{}{}:
	default:
	}
}

// flush applies every queued op in one Update and reports whether post ops
// were put back for a retry.
func (j *journal) flush() (retry bool) {
	j.mu.Lock()
	ops, held := j.queue, j.held
	j.queue = nil
	j.mu.Unlock()
	if len(ops) == 0 {
		return false
	}
	if held != nil {
		held()
	}
	err := j.led.Update(j.ctx, func(es []ledger.Entry) ([]ledger.Entry, error) {
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
			if op.attempts++; op.attempts < maxAttempts {
				again = append(again, op)
			}
		}
	}
	if err != nil {
		j.logf("supervisor: ledger write of %d changes: %v (%d kept for a retry)", len(ops), err, len(again))
	}
	if len(again) == 0 {
		return false
	}
	j.mu.Lock()
	j.queue = append(again, j.queue...)
	j.mu.Unlock()
	return true
}
