package logfile

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
)

// TestRecordRoundTrip: a record written by AppendRecord parses back to
// itself; anything else is a raw line, kept whole.
func TestRecordRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 5, 15, 9, 36, 123456000, time.UTC)
	for _, r := range []Record{
		{Time: at, Stream: Stdout, Text: "GET / 200"},
		{Time: at, Stream: Stderr, Text: ""},
		{Time: at, Stream: Stderr, Text: "  spaced  out ", Partial: true},
		{Time: at, Stream: Stdout, Text: "\x00\xff binary \x1b[31m"},
	} {
		b := AppendRecord(nil, r)
		if !bytes.HasSuffix(b, []byte("\n")) || bytes.Count(b, []byte("\n")) != 1 {
			t.Errorf("AppendRecord(%+v) = %q, want one line", r, b)
		}
		got := ParseRecord(strings.TrimSuffix(string(b), "\n"))
		if !got.Time.Equal(r.Time) || got.Stream != r.Stream || got.Text != r.Text || got.Partial != r.Partial {
			t.Errorf("ParseRecord(%q) = %+v, want %+v", b, got, r)
		}
	}
	if got := string(AppendRecord(nil, Record{Time: at, Stream: Stdout, Text: "x"})); got != "2026-12-05T15:09:36.123456Z stdout x\n" {
		t.Errorf("AppendRecord = %q, want the documented form", got)
	}
	for _, raw := range []string{
		"",
		"plain text",
		"2026-12-05T15:09:36Z web one",        // a program's own stamp
		"2026-12-05T15:09:36.123456Z stdin x", // no such stream
		"2026-12-05T15:09:36.123456+01:00 stdout x",    // not hermesd's UTC form
		"2026-13-05T15:09:36.123456Z stdout month 13",  // not a time
		"2026-12-05T15:09:36.123456Z stdoutx and more", // a word that only starts like one
	} {
		if got := ParseRecord(raw); got.Stamped() || got.Text != raw || got.Stream != "" {
			t.Errorf("ParseRecord(%q) = %+v, want a raw line", raw, got)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for Copy's writes and the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) records() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Record
	for l := range strings.Lines(s.b.String()) {
		out = append(out, ParseRecord(strings.TrimSuffix(l, "\n")))
	}
	return out
}

// waitRecords polls buf until it holds n records.
func waitRecords(t *testing.T, buf *syncBuffer, n int) []Record {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rs := buf.records()
		if len(rs) >= n {
			return rs
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %d records %s, want %d", len(rs), short(rs), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCopy: every line a writer puts into the pipe becomes one record of
// the stream, timed by when it was read; a line longer than maxLine is cut
// into partial records; an unfinished line is written as a partial record
// while the writer keeps the pipe open (not held in memory); the rest of
// the line follows; the last unfinished line is written at EOF.
func TestCopy(t *testing.T) {
	pr, pw := testkit.Pipe(t)
	buf := &syncBuffer{}
	at := time.Date(2026, 12, 5, 15, 0, 0, 0, time.UTC)
	done := make(chan error, 1)
	go func() { done <- Copy(t.Context(), buf, pr, Stderr, func() time.Time { return at }) }()

	long := strings.Repeat("x", maxLine+10)
	// A pipe that holds the whole write: in a pipe of 64 KiB the writer
	// waits for the reader mid-line, and on a loaded machine the wait can
	// pass flushAfter, which cuts the line where the reader stood.
	growPipe(t, pw, 4*maxLine)
	pw.WriteString("one\n\ntwo\x00\xff\n" + long + "\n")
	rs := waitRecords(t, buf, 5)
	want := []Record{
		{Time: at, Stream: Stderr, Text: "one"},
		{Time: at, Stream: Stderr, Text: ""},
		{Time: at, Stream: Stderr, Text: "two\x00\xff"},
		{Time: at, Stream: Stderr, Text: long[:maxLine], Partial: true},
		{Time: at, Stream: Stderr, Text: long[maxLine:]},
	}
	for i, w := range want {
		if rs[i] != w {
			t.Errorf("record %d = %s, want %s", i, short(rs[i:i+1]), short([]Record{w}))
		}
	}
	pw.WriteString("password: ")
	rs = waitRecords(t, buf, 6)
	if r := rs[5]; r.Text != "password: " || !r.Partial {
		t.Errorf("an unfinished line: record %s, want a partial record of it", short(rs[5:6]))
	}
	pw.WriteString("hunter2\nno newline at the end")
	pw.Close()
	if err := <-done; err != nil {
		t.Errorf("Copy: %v, want nil at EOF", err)
	}
	rs = buf.records()
	if len(rs) != 8 || rs[6].Text != "hunter2" || rs[6].Partial || rs[7].Text != "no newline at the end" || rs[7].Partial {
		t.Errorf("after EOF: records %s, want the line's rest, then the last line whole", short(rs[5:]))
	}
}

// TestCopyEndsWithContext: a writer that keeps the pipe open (a released
// unit) does not keep Copy once its ctx ends: what was written is kept.
func TestCopyEndsWithContext(t *testing.T) {
	pr, pw := testkit.Pipe(t)
	buf := &syncBuffer{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Copy(ctx, buf, pr, Stdout, nil) }()
	pw.WriteString("before the end\nhalf")
	waitRecords(t, buf, 1)
	cancel()
	if err := testkit.Receive(t, 10*time.Second, done, "Copy still reads 10s after its ctx ended"); err != nil {
		t.Errorf("Copy: %v, want nil", err)
	}
	rs := buf.records()
	if len(rs) != 2 || rs[0].Text != "before the end" || rs[1].Text != "half" {
		t.Errorf("records %+v, want both lines kept", rs)
	}
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

// TestCopyKeepsReading: a log that cannot be written never stalls the
// writer: Copy drains the pipe to EOF and returns the write error.
func TestCopyKeepsReading(t *testing.T) {
	pr, pw := testkit.Pipe(t)
	done := make(chan error, 1)
	go func() { done <- Copy(t.Context(), failWriter{}, pr, Stdout, nil) }()
	line := []byte(strings.Repeat("y", 1023) + "\n")
	for range 1024 { // 1 MiB, far more than a pipe's buffer
		if _, err := pw.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	pw.Close()
	if err := <-done; err == nil {
		t.Error("Copy: nil, want the write error")
	}
}

// short describes records for a failure message, long texts cut.
func short(rs []Record) string {
	var b strings.Builder
	for _, r := range rs {
		text := r.Text
		if len(text) > 40 {
			text = fmt.Sprintf("%s… (%d bytes)", text[:40], len(r.Text))
		}
		fmt.Fprintf(&b, "[%s %s partial=%v %q] ", r.Time.Format(time.RFC3339Nano), r.Stream, r.Partial, text)
	}
	return b.String()
}

// TestCopyUntilHandsOver: a copier handed over mid-stream, while a writer
// floods the pipe with numbered lines, writes what it read (an unfinished
// line as a partial record) and stops reading; a second copier on the same
// pipe takes the rest. Joined, the records hold every line once, in order.
func TestCopyUntilHandsOver(t *testing.T) {
	pr, pw := testkit.Pipe(t)
	// The writer floods the pipe until the first copier is handed over,
	// then writes 1000 lines more for the second and closes its end: a
	// writer done before the handover would end the first copy at EOF, or
	// leave the second nothing, and test no handover.
	type written struct {
		lines int
		err   error
	}
	wrote, handed := make(chan written, 1), make(chan struct{})
	go func() {
		var b []byte
		n, end := 0, -1 // end: the lines in all, set at the handover
		for ; end < 0 || n < end; n++ {
			select {
			case <-handed:
				if end < 0 {
					end = n + 1000
				}
			default:
			}
			// Writes that end mid-line, so that the handover finds an
			// unfinished line more often than not.
			b = fmt.Appendf(b, "line %d\n", n)
			if len(b) > 1000 {
				if _, err := pw.Write(b[:len(b)-3]); err != nil {
					wrote <- written{n, err} // the read end closed: the test failed
					return
				}
				b = append(b[:0], b[len(b)-3:]...)
			}
		}
		_, err := pw.Write(b)
		pw.Close()
		wrote <- written{n, err}
	}()
	first, second := &syncBuffer{}, &syncBuffer{}
	hand, handOver := context.WithCancel(t.Context())
	type result struct {
		handed bool
		err    error
	}
	done := make(chan result, 1)
	go func() {
		h, err := CopyUntil(t.Context(), hand, first, pr, Stdout, nil)
		done <- result{h, err}
	}()
	testkit.Eventually(t, 10*time.Second, "the first copier's first records", func() bool {
		first.mu.Lock()
		defer first.mu.Unlock()
		return bytes.Count(first.b.Bytes(), []byte("\n")) >= 100
	})
	handOver()
	res := <-done
	close(handed)
	if !res.handed || res.err != nil {
		t.Fatalf("CopyUntil: handed %v, %v; want handed over, nil", res.handed, res.err)
	}
	before := len(first.records())
	if err := Copy(t.Context(), second, pr, Stdout, nil); err != nil {
		t.Fatalf("the second copier: %v", err)
	}
	w := <-wrote
	if w.err != nil {
		t.Fatal(w.err)
	}
	if after := len(first.records()); after != before {
		t.Errorf("the first copier wrote %d records after it returned", after-before)
	}
	// Join partial records, as readers do.
	var texts []string
	var part strings.Builder
	for _, r := range append(first.records(), second.records()...) {
		part.WriteString(r.Text)
		if !r.Partial {
			texts = append(texts, part.String())
			part.Reset()
		}
	}
	if len(texts) != w.lines {
		t.Fatalf("%d lines after the handover (%d records by the first copier), want %d", len(texts), before, w.lines)
	}
	for i, text := range texts {
		if want := fmt.Sprintf("line %d", i); text != want {
			t.Fatalf("line %d is %q, want %q: a line lost or written twice at the handover", i, text, want)
		}
	}
	if len(second.records()) == 0 {
		t.Errorf("the second copier wrote nothing: the handover came after the end, nothing was tested")
	}
}

// TestCopyUntilAtEOF: a pipe whose writers are gone is not handed over:
// CopyUntil returns at EOF, handed false.
func TestCopyUntilAtEOF(t *testing.T) {
	pr, pw := testkit.Pipe(t)
	pw.WriteString("last\n")
	pw.Close()
	buf := &syncBuffer{}
	handed, err := CopyUntil(t.Context(), t.Context(), buf, pr, Stdout, nil)
	if handed || err != nil {
		t.Errorf("CopyUntil at EOF: handed %v, %v; want false, nil", handed, err)
	}
	if rs := buf.records(); len(rs) != 1 || rs[0].Text != "last" {
		t.Errorf("records %s, want the last line", short(rs))
	}
}
