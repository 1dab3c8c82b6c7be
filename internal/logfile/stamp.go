package logfile

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Stamped records. An owned unit's stdout and stderr are pipes into
// hermesd, which writes every line it reads to the log file as one record:
//
//	2026-12-05T15:09:36.123456Z stdout GET / 200
//	2026-12-05T15:09:36.130002Z stderr+ a line longer than 64 KiB, cut here
//
// the time hermesd read it (RFC 3339, UTC, always six fractional digits, so
// that records sort as text), the stream, one space, and the text as the
// program wrote it without its newline (bytes as they came: no encoding is
// assumed). A stream word ending in "+" marks a record whose line goes on in
// the next record of that stream: a line longer than maxLine bytes, or a
// line the program left unfinished for flushAfter (a prompt), which is
// written then rather than held in hermesd's memory.
//
// A survivor (adoptable under a gateway, persist_on_release) writes its log
// file directly, so that it never writes into a pipe whose reader can die:
// its lines carry no record header, only what the program prints. Readers
// take any line that does not parse as a record as such a raw line
// (ParseRecord), so one file may hold both (a unit whose ownership changed).

// Stream names the output a record came from.
type Stream string

// The streams of a record; "" for a raw line (a unit writing its file
// directly, both streams in one).
const (
	Stdout Stream = "stdout"
	Stderr Stream = "stderr"
)

// stampLayout is the record's time: RFC 3339 with a fixed width.
const stampLayout = "2006-01-02T15:04:05.000000Z07:00"

// stampLen is the length of a record's time in UTC.
const stampLen = len("2006-01-02T15:04:05.000000Z")

// Record is one line of a log file.
type Record struct {
	Time    time.Time // when hermesd read it; zero for a raw line
	Stream  Stream    // "" for a raw line
	Text    string
	Partial bool // the line goes on in the stream's next record
}

// Stamped reports whether r came with hermesd's header.
func (r Record) Stamped() bool { return !r.Time.IsZero() }

// AppendRecord appends r as one line of a log file, newline included.
func AppendRecord(b []byte, r Record) []byte {
	b = r.Time.UTC().AppendFormat(b, stampLayout)
	b = append(b, ' ')
	b = append(b, r.Stream...)
	if r.Partial {
		b = append(b, '+')
	}
	b = append(b, ' ')
	b = append(b, r.Text...)
	return append(b, '\n')
}

// ParseRecord reads one line of a log file, without its newline: a record
// hermesd wrote, or else a raw line (Record{Text: line}).
func ParseRecord(line string) Record {
	raw := Record{Text: line}
	if len(line) < stampLen+len(" stdout") || line[stampLen-1] != 'Z' || line[stampLen] != ' ' {
		return raw
	}
	t, err := time.Parse(time.RFC3339Nano, line[:stampLen])
	if err != nil {
		return raw
	}
	rest := line[stampLen+1:]
	word, text, _ := strings.Cut(rest, " ")
	r := Record{Time: t, Text: text}
	if w, ok := strings.CutSuffix(word, "+"); ok {
		word, r.Partial = w, true
	}
	switch Stream(word) {
	case Stdout, Stderr:
		r.Stream = Stream(word)
	default:
		return raw
	}
	return r
}

// flushAfter is how long an unfinished line waits in hermesd for the rest
// of it before it is written as a partial record.
const flushAfter = 200 * time.Millisecond

// drainFor bounds how long Copy keeps reading once its ctx has ended.
const drainFor = 100 * time.Millisecond

// Copy reads the pipe r until every writer has closed it (EOF) and writes
// each line read to w as a record of stream s timed by now (nil:
// time.Now). Complete lines read together go to w in one Write, which
// on a file opened with O_APPEND lands whole even beside another Copy's.
// When ctx ends, Copy reads on for at most drainFor (what the writers
// left in the pipe), writes what it holds, and returns: hermesd is
// stopping, and a writer that outlives it must not keep it. A write error
// does not stop the reading (a unit must never stall on a full disk): the
// lines are dropped, and Copy returns the first error at the end. r is not
// closed.
func Copy(ctx context.Context, w io.Writer, r *os.File, s Stream, now func() time.Time) error {
	_, err := CopyUntil(ctx, nil, w, r, s, now)
	return err
}

// CopyUntil is Copy that stops when hand ends (nil: never), to hand the
// pipe over to another reader (a released unit's output, which a relay
// process copies on): it reads nothing more from r, writes the unfinished
// line it holds as a partial record (the next reader's first record of the
// stream carries the rest of it), and returns with handed true once that
// write is done. What it has not read stays in the pipe for the next
// reader: no byte is lost, none written twice. A pipe that reaches EOF
// first returns handed false: nothing is left to hand over.
func CopyUntil(ctx, hand context.Context, w io.Writer, r *os.File, s Stream, now func() time.Time) (handed bool, err error) {
	if now == nil {
		now = time.Now
	}
	if hand == nil {
		hand = context.Background()
	}
	c := copier{w: w, s: s, now: now}
	// deadline sets r's read deadline to at (zero: none), or sooner when
	// hand or ctx has ended: now for a handover, drainFor from now once
	// ctx is over. Each end's AfterFunc sets it too; the checks after the
	// set catch an end whose AfterFunc ran before it.
	deadline := func(at time.Time) {
		_ = r.SetReadDeadline(at)
		switch {
		case hand.Err() != nil:
			_ = r.SetReadDeadline(time.Now())
		case ctx.Err() != nil && (at.IsZero() || at.After(time.Now().Add(drainFor))):
			_ = r.SetReadDeadline(time.Now().Add(drainFor))
		}
	}
	stopHand := context.AfterFunc(hand, func() { _ = r.SetReadDeadline(time.Now()) })
	defer stopHand()
	stop := context.AfterFunc(ctx, func() { deadline(time.Now().Add(drainFor)) })
	defer stop()
	rc, err := r.SyscallConn()
	if err != nil {
		return false, err
	}
	for {
		err := readInto(rc, c.take)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			if hand.Err() != nil {
				c.flush(true)
				return true, c.err
			}
			c.flush(true)
			if ctx.Err() != nil {
				return false, c.err
			}
			deadline(time.Time{})
		case err != nil: // EOF, or a read error: the stream ends here
			c.flush(false)
			if errors.Is(err, io.EOF) {
				return false, c.err
			}
			return false, errors.Join(c.err, err)
		case hand.Err() != nil:
			deadline(time.Time{}) // read no more: the next read returns at once
		case len(c.line) > 0 && ctx.Err() == nil:
			// An unfinished line: give the rest flushAfter to come.
			deadline(time.Now().Add(flushAfter))
		}
	}
}

// copier turns the bytes of one stream into records.
type copier struct {
	w    io.Writer
	s    Stream
	now  func() time.Time
	line []byte // the unfinished line read so far
	out  []byte
	err  error // the first write error
}

// take splits b into lines and writes the complete ones, and pieces of
// maxLine bytes of a longer one, in one Write.
func (c *copier) take(b []byte) {
	at := c.now()
	c.out = c.out[:0]
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		end := i
		if i < 0 {
			end = len(b)
		}
		c.line = append(c.line, b[:end]...)
		c.cut(at)
		if i < 0 {
			break
		}
		c.out = AppendRecord(c.out, Record{Time: at, Stream: c.s, Text: string(c.line)})
		c.line = c.line[:0]
		b = b[i+1:]
	}
	c.write()
}

// cut moves pieces of maxLine bytes of a line longer than that to the
// output as partial records.
func (c *copier) cut(at time.Time) {
	for len(c.line) > maxLine {
		c.out = AppendRecord(c.out, Record{Time: at, Stream: c.s, Text: string(c.line[:maxLine]), Partial: true})
		c.line = append(c.line[:0], c.line[maxLine:]...)
	}
}

// flush writes the unfinished line, as a partial record when more of it
// may come.
func (c *copier) flush(partial bool) {
	if len(c.line) == 0 {
		return
	}
	c.out = AppendRecord(c.out[:0], Record{Time: c.now(), Stream: c.s, Text: string(c.line), Partial: partial})
	c.line = c.line[:0]
	c.write()
}

func (c *copier) write() {
	if len(c.out) == 0 {
		return
	}
	if _, err := c.w.Write(c.out); err != nil && c.err == nil {
		c.err = err
	}
	c.out = c.out[:0]
	if cap(c.out) > keepBuf {
		c.out = nil // a burst's buffer is not kept while the pipe is idle
	}
	if len(c.line) == 0 && cap(c.line) > keepBuf {
		c.line = nil
	}
}

// keepBuf is the most a copier keeps of a buffer it grew, between reads.
const keepBuf = 4 << 10

// readBufs are the copiers' read buffers: one is taken only while a read
// has bytes to give, so that an idle copier (most of them, most of the
// time: one for each stream of each owned unit) holds none.
var readBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// readInto reads once from rc, when it has bytes (or its end, or its read
// deadline passes), into a buffer of readBufs, and gives them to take
// before the buffer goes back. It returns io.EOF at the end, and the
// deadline's os.ErrDeadlineExceeded.
func readInto(rc syscall.RawConn, take func([]byte)) error {
	var n int
	var rerr error
	var buf *[]byte
	err := rc.Read(func(fd uintptr) bool {
		buf = readBufs.Get().(*[]byte)
		for {
			n, rerr = syscall.Read(int(fd), *buf)
			if rerr != syscall.EINTR {
				break
			}
		}
		if rerr == syscall.EAGAIN {
			readBufs.Put(buf)
			buf = nil
			return false // wait until the pipe is readable
		}
		return true
	})
	if buf != nil {
		defer readBufs.Put(buf)
	}
	switch {
	case err != nil:
		return err
	case rerr != nil:
		return rerr
	case n <= 0:
		return io.EOF
	}
	take((*buf)[:n])
	return nil
}
