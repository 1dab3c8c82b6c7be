package ledger

import "time"

// ObserveWrites makes every later Update call fn with its duration, lock
// wait included, once it has ended (written, or failed). Call it before the
// Ledger is shared; fn runs on the updating goroutine and must be quick.
// hermesd feeds hermes_ledger_write_duration_seconds with it.
func (l *Ledger) ObserveWrites(fn func(time.Duration)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.onWrite = fn
}

// observeWrite reports an Update that began at start.
func (l *Ledger) observeWrite(start time.Time) {
	l.mu.Lock()
	fn := l.onWrite
	l.mu.Unlock()
	if fn != nil {
		fn(time.Since(start))
	}
}
