package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestFollowLogsAcrossRotation: logs -f of several units without hermesd
// prints what each file gets, after its unit's name, also after a rotation
// truncated a file in place (what hermesd's rotation does, and what a
// survivor writes through after hermesd is gone).
func TestFollowLogsAcrossRotation(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte("before\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	appendTo := func(p, s string) {
		t.Helper()
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := io.WriteString(f, s); err != nil {
			t.Fatal(err)
		}
	}
	out, ch := lines(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- printLogs(ctx, out, io.Discard, []unitLog{{"a", a}, {"b", b}}, logOptions{lines: -1, names: true, follow: true})
	}()
	// -n -1: a line written before printLogs read the file is printed
	// from the file, one written after it by the follower; either way once.
	appendTo(a, "a one\n")
	waitLine(t, ch, "a's line", func(l string) bool { return l == "a | a one" })
	appendTo(b, "b one\n")
	waitLine(t, ch, "b's line", func(l string) bool { return l == "b | b one" })
	if err := os.Truncate(a, 0); err != nil { // a rotation, in place
		t.Fatal(err)
	}
	// Shorter than what the follower had read: a follower notices a
	// rotation by the file being shorter than its offset (logfile).
	appendTo(a, "a2\n")
	waitLine(t, ch, "a's line after the rotation", func(l string) bool { return l == "a | a2" })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("printLogs: %v, want nil once interrupted", err)
	}
}
