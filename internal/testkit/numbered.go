package testkit

import (
	"strconv"
	"strings"
	"testing"
)

// CheckNumbered checks a log that writers filled with the numbers 0, 1,
// 2, ... one a line, on each of its streams: on each stream every number
// comes once and in order, a line the log cut in parts (partial, joined
// with the next of its stream) counted whole. parse reads one line of the
// log, without its newline: its stream, its text, whether it is a part,
// and ok false for a line that is not a record (the test fails there).
// It returns how many numbers each stream held, for the caller's bounds.
//
// The caller names the log's format through parse (internal/logfile's
// records), as testkit may not import the packages whose tests use it.
func CheckNumbered[S comparable](t testing.TB, log []byte, parse func(line string) (stream S, text string, partial, ok bool)) map[S]int {
	t.Helper()
	next := map[S]int{}
	part := map[S]string{}
	for line := range strings.Lines(string(log)) {
		stream, text, partial, ok := parse(strings.TrimSuffix(line, "\n"))
		if !ok {
			t.Fatalf("log line %q is not a record", line)
		}
		text = part[stream] + text
		if partial {
			part[stream] = text
			continue
		}
		part[stream] = ""
		if want := strconv.Itoa(next[stream]); text != want {
			t.Fatalf("%v: line %q where %q was due: a line lost or written twice", stream, text, want)
		}
		next[stream]++
	}
	return next
}
