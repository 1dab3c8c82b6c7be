package main

import (
	"bufio"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/events"
	"github.com/hermes-units/hermes/internal/testkit"
)

// serveFake serves a fakeDaemon answering sc (its version too), with an
// event bus, on a socket of the test's; it returns the socket.
func serveFake(t *testing.T, sc fakeScript) (string, *fakeDaemon) {
	t.Helper()
	dir := t.TempDir()
	socket := filepath.Join(dir, "run", "hermesd.sock")
	ln, err := control.Listen(socket, nil)
	if err != nil {
		t.Fatal(err)
	}
	bus := events.New(events.Options{})
	d := &fakeDaemon{script: sc, work: dir, calls: filepath.Join(dir, "calls"), bus: bus}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- control.NewServer(d, control.Options{Events: bus, Version: sc.Version}).Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return socket, d
}

// lines returns a writer and the channel of the lines written to it.
func lines(t *testing.T) (io.WriteCloser, <-chan string) {
	r, w := io.Pipe()
	ch := make(chan string, 1024)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	t.Cleanup(func() { w.Close() })
	return w, ch
}

// runWatch runs `hermesctl status --watch` against socket on a goroutine
// of its own: it returns the lines it prints, the interrupt (cancel) and
// the command's result, which the caller takes.
func runWatch(t *testing.T, socket string) (<-chan string, context.CancelFunc, <-chan error) {
	out, ch := lines(t)
	ctx, cancel := context.WithCancel(t.Context())
	root := newRoot()
	root.SetArgs([]string{"--socket", socket, "status", "--watch"})
	root.SetOut(out)
	root.SetErr(io.Discard)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	return ch, cancel, done
}

// waitLine reads lines until one matches, within a deadline.
func waitLine(t *testing.T, ch <-chan string, what string, match func(string) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	var seen []string
	for {
		select {
		case l, ok := <-ch:
			if !ok {
				t.Fatalf("output ended before %s; it was:\n%s", what, strings.Join(seen, "\n"))
			}
			seen = append(seen, l)
			if match(l) {
				return
			}
		case <-deadline:
			t.Fatalf("no %s within 10s; output:\n%s", what, strings.Join(seen, "\n"))
		}
	}
}

// TestStatusWatch: status --watch draws the table, then draws it again
// when an event says something changed.
func TestStatusWatch(t *testing.T) { watchRedraws(t, runWatch) }

// TestRunStatusWatch: status's run function with --watch, called without
// cobra, does the same.
func TestRunStatusWatch(t *testing.T) { watchRedraws(t, runWatchOptions) }

// runWatchOptions is runWatch without cobra: runStatus with --watch over
// clientOptions of socket.
func runWatchOptions(t *testing.T, socket string) (<-chan string, context.CancelFunc, <-chan error) {
	o, _, _ := testClient(t, socket, false)
	w, ch := lines(t)
	o.out = w
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- runStatus(ctx, &statusOptions{clientOptions: o, watch: true}) }()
	return ch, cancel, done
}

// watchRedraws checks status --watch started by start: the table, drawn
// again after an event, and nil once interrupted.
func watchRedraws(t *testing.T, start func(*testing.T, string) (<-chan string, context.CancelFunc, <-chan error)) {
	socket, d := serveFake(t, fakeScript{Status: control.Status{Units: []control.Unit{
		{Name: "web", State: "running", PID: 4242, PGID: 4242, Ownership: "owned", Ready: true},
	}}})
	ch, cancel, done := start(t, socket)
	waitLine(t, ch, "web running", func(l string) bool { return strings.HasPrefix(l, "web ") && strings.Contains(l, "running") })
	if err := d.Stop(t.Context(), "web"); err != nil {
		t.Fatal(err)
	}
	waitLine(t, ch, "web inactive after the stop event", func(l string) bool {
		return strings.HasPrefix(l, "web ") && strings.Contains(l, "inactive")
	})
	cancel()
	if err := testkit.Receive(t, 10*time.Second, done, "status --watch still running 10s after the interrupt"); err != nil {
		t.Errorf("status --watch after interrupt: %v, want nil", err)
	}
}

func TestStatusWatchRefusesJSON(t *testing.T) {
	root := newRoot()
	root.SetArgs([]string{"--socket", "/nonexistent", "status", "--watch", "-o", "json"})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	err := root.ExecuteContext(t.Context())
	if err == nil || !strings.Contains(err.Error(), "hermesctl events -f -o json") {
		t.Errorf("got %v, want a pointer to events -f -o json", err)
	}
}

// TestStatusWatchInterruptReturns: an interrupt ends status --watch every
// time, whichever of the interrupt and the end of the event stream it sees
// first (it once waited forever for a stream end it had already taken).
func TestStatusWatchInterruptReturns(t *testing.T) {
	socket, _ := serveFake(t, fakeScript{Status: control.Status{Units: []control.Unit{
		{Name: "web", State: "running", PID: 4242, PGID: 4242, Ownership: "owned", Ready: true},
	}}})
	for i := range 40 {
		ch, cancel, done := runWatch(t, socket)
		waitLine(t, ch, "web running", func(l string) bool { return strings.HasPrefix(l, "web ") })
		cancel()
		if err := testkit.Receive(t, 10*time.Second, done, "round %d: status --watch still running 10s after the interrupt", i); err != nil {
			t.Fatalf("round %d: status --watch after interrupt: %v, want nil", i, err)
		}
	}
}
