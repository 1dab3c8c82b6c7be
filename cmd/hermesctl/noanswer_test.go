package main

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/internal/testkit"
)

// mute is a control socket whose daemon never answers, as a hermesd
// stopped by SIGSTOP looks to a client (the kernel queues the connection;
// nothing reads it): it accepts one connection and holds it until the
// test ends; the others wait in the listener's queue.
func mute(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "h.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Serve(t, ln, func(net.Conn) { <-t.Context().Done() })
	return path
}

// TestNoAnswer: every command that talks to hermesd ends, within a bound,
// when hermesd accepts its connection and never answers: with a line that
// says so and what to check, and exit status 3. Without the bound status,
// stop, reload and logs waited forever.
func TestNoAnswer(t *testing.T) {
	socket := mute(t)
	dir := t.TempDir()
	cmds := [][]string{
		{"status"}, {"stop", "web"}, {"start", "web"}, {"reload"}, {"logs", "web"}, {"logs", "-f", "web"},
		{"events", "-f"}, {"is-active", "web"}, {"version"},
	}
	// All at once: each waits out the bound.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	errs := make([]chan error, len(cmds))
	for i, args := range cmds {
		root := newRoot()
		root.SetArgs(append([]string{"--socket", socket, "--state", filepath.Join(dir, "state"), "--units", filepath.Join(dir, "units")}, args...))
		root.SetOut(&bytes.Buffer{})
		root.SetErr(&bytes.Buffer{})
		errs[i] = make(chan error, 1)
		go func() { errs[i] <- root.ExecuteContext(ctx) }()
	}
	deadline := time.After(answerWithin + 30*time.Second)
	for i, args := range cmds {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var err error
			select {
			case err = <-errs[i]:
			case <-deadline:
				cancel()
				<-errs[i]
				t.Fatalf("hermesctl %s still waiting for a mute hermesd after %v", strings.Join(args, " "), answerWithin+30*time.Second)
			}
			want := "hermesd does not answer on " + socket + ": no answer within 5s; it is stopped or wedged"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("got error %v, want one containing %q", err, want)
			}
			if got := report(err, &bytes.Buffer{}); got != exitcode.HermesctlNotRunning {
				t.Errorf("got exit status %d, want %d", got, exitcode.HermesctlNotRunning)
			}
		})
	}
}
