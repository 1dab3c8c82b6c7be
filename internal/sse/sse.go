// Package sse reads text/event-stream (Server-Sent Events) byte streams the
// way a relay needs them: every piece is returned with its exact raw bytes,
// so that a relay can forward the stream unchanged, and comments
// (": ping") and events without data are returned too, so that a watchdog
// can tell keep-alives from content. Parsers that hide comments cannot do
// that.
//
// The framing follows the WHATWG HTML "event stream interpretation": lines
// end in CRLF, LF or a lone CR; a blank line dispatches the pending event;
// a line starting with ':' is a comment; "field: value" loses one leading
// space from the value; data lines are joined with "\n".
package sse

import (
	"bytes"
	"errors"
	"io"
)

// ErrTooLong is returned when an event or a line exceeds the Reader's limit.
var ErrTooLong = errors.New("sse: event too long")

// DefaultMaxEvent bounds one event's raw size: large tool-call arguments fit,
// a stream that never sends a blank line does not grow without bound.
const DefaultMaxEvent = 8 << 20

// Kind says what a Piece is.
type Kind int

const (
	// Comment is one comment line, returned as soon as it is complete when
	// no event is pending (a keep-alive such as ": ping").
	Comment Kind = iota
	// Event is a dispatched event: a block with at least one data line,
	// ended by a blank line.
	Event
	// Empty is a blank line with nothing pending, or a block that had
	// fields but no data line (not dispatched, per the standard).
	Empty
)

// Piece is one unit of the stream.
type Piece struct {
	Kind Kind
	// Raw holds the exact bytes of the piece, line endings included. The
	// concatenation of every Raw returned is the stream read so far, minus
	// an incomplete trailing line. Raw is valid until the next call of
	// Next.
	Raw []byte
	// Type is the event field ("" when absent), ID the id field, Data the
	// data lines joined with "\n"; set for Event pieces only. Data is valid
	// until the next call of Next.
	Type string
	ID   string
	Data []byte
	// Comment is the text after ':' of a Comment piece, one leading space
	// removed.
	Comment []byte
}

// Reader splits an event stream into pieces. It is not safe for concurrent
// use.
type Reader struct {
	r   io.Reader
	max int

	buf  []byte // bytes read and not yet consumed: buf[off:]
	off  int
	err  error // sticky read error
	skip bool  // the previous line ended in CR: drop one LF at the start of buf

	raw     []byte // raw bytes of the pending block
	data    []byte
	hasData bool
	typ, id string
	fields  bool // the pending block had a line other than comments
}

// NewReader returns a Reader with the DefaultMaxEvent limit.
func NewReader(r io.Reader) *Reader { return NewReaderSize(r, DefaultMaxEvent) }

// NewReaderSize returns a Reader whose events and lines may not exceed max
// bytes.
func NewReaderSize(r io.Reader, max int) *Reader {
	return &Reader{r: r, max: max, buf: make([]byte, 0, 512)}
}

// Buffered reports how many bytes have been read from the underlying reader
// and not yet returned in a piece. A relay flushes its output when it is 0:
// nothing else is ready to forward.
func (r *Reader) Buffered() int { return len(r.buf) - r.off }

// Next returns the next piece. At the end of the stream it returns io.EOF
// (an incomplete last event is discarded, as the standard says); a read
// error is returned as is, ErrTooLong when the limit is hit.
func (r *Reader) Next() (Piece, error) {
	for {
		line, ok, err := r.line()
		if err != nil {
			return Piece{}, err
		}
		if !ok {
			continue
		}
		if p, done := r.feed(line); done {
			return p, nil
		}
	}
}

// line returns the next complete line with its terminator, reading more
// when needed. ok is false when a lone LF after a CR was swallowed into the
// pending raw bytes.
func (r *Reader) line() (line []byte, ok bool, err error) {
	for {
		avail := r.buf[r.off:]
		if r.skip && len(avail) > 0 {
			r.skip = false
			if avail[0] == '\n' {
				r.off++
				// Keep the byte in the stream: it belongs to the previous
				// line's terminator, and the raw output must be exact.
				r.raw = append(r.raw, '\n')
				return nil, false, nil
			}
		}
		if i := bytes.IndexAny(avail, "\r\n"); i >= 0 {
			n := i + 1
			if avail[i] == '\r' {
				if i+1 < len(avail) {
					if avail[i+1] == '\n' {
						n++
					}
				} else {
					r.skip = true
				}
			}
			if len(r.raw)+n > r.max {
				return nil, false, ErrTooLong
			}
			r.off += n
			return avail[:n], true, nil
		}
		if r.err != nil {
			return nil, false, r.err
		}
		if len(avail)+len(r.raw) >= r.max {
			return nil, false, ErrTooLong
		}
		r.fill()
	}
}

func (r *Reader) fill() {
	if r.off > 0 && r.off == len(r.buf) {
		r.buf, r.off = r.buf[:0], 0
	} else if r.off > len(r.buf)/2 || len(r.buf) == cap(r.buf) {
		n := copy(r.buf, r.buf[r.off:])
		r.buf, r.off = r.buf[:n], 0
		if len(r.buf) == cap(r.buf) {
			r.buf = append(r.buf, make([]byte, cap(r.buf))...)[:n]
		}
	}
	n, err := r.r.Read(r.buf[len(r.buf):cap(r.buf)])
	r.buf = r.buf[:len(r.buf)+n]
	if err != nil {
		r.err = err
	}
}

// feed interprets one line. done says a piece is ready.
func (r *Reader) feed(line []byte) (Piece, bool) {
	body := bytes.TrimRight(line, "\r\n")
	pending := len(r.raw) > 0 && r.fields
	switch {
	case len(body) == 0:
		raw := append(r.raw, line...)
		p := Piece{Kind: Empty, Raw: raw}
		if r.hasData {
			p.Kind, p.Type, p.ID, p.Data = Event, r.typ, r.id, r.data
		}
		r.reset(raw)
		return p, true
	case body[0] == ':':
		if !pending {
			raw := append(r.raw, line...)
			p := Piece{Kind: Comment, Raw: raw, Comment: trimSpace(body[1:])}
			r.reset(raw)
			return p, true
		}
		r.raw = append(r.raw, line...)
		return Piece{}, false
	}
	r.raw = append(r.raw, line...)
	r.fields = true
	name, value := body, []byte(nil)
	if i := bytes.IndexByte(body, ':'); i >= 0 {
		name, value = body[:i], trimSpace(body[i+1:])
	}
	switch string(name) {
	case "event":
		r.typ = string(value)
	case "data":
		if r.hasData {
			r.data = append(r.data, '\n')
		}
		r.data = append(r.data, value...)
		r.hasData = true
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			r.id = string(value)
		}
	}
	return Piece{}, false
}

// reset clears the pending block, reusing its buffers.
func (r *Reader) reset(raw []byte) {
	r.raw = raw[:0]
	r.data = r.data[:0]
	r.hasData, r.fields, r.typ = false, false, ""
	// The last event id persists across events, as in the standard.
}

func trimSpace(b []byte) []byte {
	if len(b) > 0 && b[0] == ' ' {
		return b[1:]
	}
	return b
}
