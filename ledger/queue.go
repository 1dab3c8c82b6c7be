package ledger

import (
	"errors"
	"io"
	"os"

	"github.com/hermes-units/hermes/internal/safefile"
	"golang.org/x/sys/unix"
)

// Waiting in line. flock is not fair: when the lock is released, every
// blocked waiter is woken and the first to run takes it, and the process
// that just released it, still on a CPU, usually runs first and takes it
// again for its next write. Under contention one waiter can lose that race
// many times in a row: the tail of the lock wait was many holds long.
//
// So writers queue before they flock, in the file ledger.queue. A writer
// takes a ticket by appending one byte to it (O_APPEND: the offset it wrote
// at is its ticket, unique among those who append), locks that byte
// (an open file description lock, F_OFD_SETLK), and waits until the byte of
// the ticket before its own is unlocked (F_OFD_SETLKW); then it takes the
// flock. It unlocks its byte after it released the flock, which wakes its
// successor alone. The kernel drops the locks of a process that dies, so a
// dead writer never blocks the line.
//
// The queue only orders; the flock still excludes. Whatever goes wrong with
// the queue (it cannot be opened, a byte is taken by another ticket of the
// same number after the file was reset, a writer has not locked its byte
// yet when its successor looks) costs fairness, never exclusion. A writer
// that gives up unlocks its byte at once: those behind it then wait for the
// flock itself, within their own timeouts.
//
// The file grows by a byte per write; the lock holder empties it past
// queueReset bytes. Tickets then start again from 0.
//
// The line needs open file description locks (Linux). darwin and FreeBSD
// have none, and their fcntl locks belong to the process, not the open
// file: two writers of one process would share every byte, and a close of
// any descriptor of the file would drop them all. There the writers do not
// queue (every ticket is the zero ticket) and contend for the flock as it
// is: exclusion holds, the fairness above does not.
//
// EnvQueue=off in a process's environment makes its writers do the same on
// Linux: that is how the test of the no-line path (TestNoLineWriters) and
// make bench's ledger section, which compares the two, run it there.
const (
	QueueName  = "ledger.queue"
	queueReset = 1 << 20
	EnvQueue   = "HERMES_LEDGER_QUEUE"
)

// inLine: this process's writers queue. It is read once, when the package
// is initialised, and never changes: every Ledger of a process takes the
// same path. Only EnvQueue=off turns the line off; another value, or none,
// leaves the platform's default. A process without the line among others
// in it costs them fairness, not exclusion: it takes the zero ticket, so it
// waits for no one and no one waits for it, and the flock still excludes.
var inLine = ofdLocks && os.Getenv(EnvQueue) != "off"

// ticket is a writer's place in line. The zero ticket (no file) is not in
// line: it neither waits nor is waited for.
type ticket struct {
	path string
	own  *os.File // holds the lock on byte n; nil when not in line
	n    int64
}

// enqueue takes a ticket. It never fails: without a queue the writer just
// contends for the flock.
func (l *Ledger) enqueue() *ticket {
	t := &ticket{path: l.queue}
	if !inLine {
		return t
	}
	f, err := safefile.OpenFile(l.queue, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return t
	}
	if _, err := f.Write([]byte{'.'}); err != nil {
		f.Close()
		return t
	}
	end, err := f.Seek(0, io.SeekCurrent) // O_APPEND: just past the byte written
	if err != nil || end < 1 {
		f.Close()
		return t
	}
	n := end - 1
	if err := lockTicket(f, n); err != nil {
		// Another ticket of that number, from before the file was reset,
		// is still in line: stand outside it.
		f.Close()
		return t
	}
	t.own, t.n = f, n
	return t
}

// behind reports whether the ticket ahead is still taken: its writer waits
// or holds the flock.
func (t *ticket) behind() bool {
	if t.own == nil || t.n == 0 {
		return false
	}
	return ticketTaken(t.own, t.n-1)
}

// waitFile opens the descriptor waitAhead blocks on, or returns nil (then
// waitAhead does not wait).
func (t *ticket) waitFile() *os.File {
	if t.own == nil || t.n == 0 {
		return nil
	}
	f, err := safefile.OpenFile(t.path, os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	return f
}

// waitAhead blocks until the ticket ahead is released, then closes wait
// (which drops the lock it took on that byte). It runs on the waiter's
// goroutine, which owns wait. An error other than EINTR means the line is
// broken: the writer then contends for the flock as it is.
func (t *ticket) waitAhead(wait *os.File) {
	if wait == nil {
		return
	}
	defer wait.Close()
	for errors.Is(waitTicket(wait, t.n-1), unix.EINTR) {
	}
}

// reset empties the queue file when it has grown past queueReset; the
// caller holds the flock. (Those in line keep their places: they wait on
// their own bytes, which truncation does not unlock.)
func (t *ticket) reset() {
	if t.own != nil && t.n >= queueReset {
		_ = t.own.Truncate(0)
	}
}

// leave gives the ticket up, waking the writer behind it. Idempotent.
func (t *ticket) leave() {
	if t.own != nil {
		t.own.Close()
		t.own = nil
	}
}
