package main

import (
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

// TestEventsFollowAcrossRestart: events -f goes on across a restart of
// hermesd (it exited when the first one did): it prints the first
// hermesd's events, then the new one's, each once.
func TestEventsFollowAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	socket := filepath.Join(dir, "run", "hermesd.sock")
	serve := func() (*events.Bus, func()) {
		ln, err := control.Listen(socket, nil)
		if err != nil {
			t.Fatal(err)
		}
		bus := events.New(events.Options{})
		d := &fakeDaemon{work: dir, calls: filepath.Join(dir, "calls"), bus: bus}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- control.NewServer(d, control.Options{Events: bus}).Serve(ctx, ln) }()
		return bus, func() { cancel(); <-done }
	}
	bus, stop := serve()
	bus.Publish(events.Event{Kind: events.UnitReady, Unit: "first"})

	out, ch := lines(t)
	root := newRoot()
	root.SetArgs([]string{"--socket", socket, "events", "-f"})
	root.SetOut(out)
	root.SetErr(io.Discard)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	waitLine(t, ch, "the first hermesd's event", func(l string) bool { return strings.Contains(l, "first ready") })

	stop() // hermesd restarts
	bus, stop = serve()
	defer stop()
	bus.Publish(events.Event{Kind: events.UnitReady, Unit: "second"})
	waitLine(t, ch, "the new hermesd's event", func(l string) bool {
		if strings.Contains(l, "first ready") {
			t.Errorf("printed again after the restart: %q", l)
		}
		return strings.Contains(l, "second ready")
	})
	cancel()
	if err := testkit.Receive(t, 10*time.Second, done, "events -f still running 10s after the interrupt"); err != nil {
		t.Errorf("events -f after interrupt: %v, want nil", err)
	}
}
