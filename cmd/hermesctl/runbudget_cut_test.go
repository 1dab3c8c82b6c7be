package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/exitcode"
)

// runsDaemon is a fakeDaemon that registers runs: it appends "register",
// "end RUN" (EndRun) and "release" to one file, which the child's TERM
// trap appends to as well, so that the file's order is the order of
// events.
type runsDaemon struct {
	*fakeDaemon
	order string
}

func (d runsDaemon) note(what string) {
	f, err := os.OpenFile(d.order, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		f.WriteString(what + "\n")
		f.Close()
	}
}

func (d runsDaemon) RegisterRun(_ context.Context, req control.RunRequest) (control.RunRegistration, func(), error) {
	d.note("register")
	return control.RunRegistration{ID: "run-1", BaseURL: "http://127.0.0.1:1/run/run-1/v1", Deadline: time.Now().Add(req.Budget - req.Spent)},
		func() { d.note("release") }, nil
}

func (d runsDaemon) EndRun(_ context.Context, id string) (bool, error) {
	d.note("end " + id)
	return true, nil
}

// TestRunBudgetCutBeforeTerm: at a `hermesctl run --run-budget` deadline,
// hermesctl has hermesd end the run (its calls in flight cut) and waits
// for the answer before it sends the TERM, so the order holds whichever
// clock's timer is late. Before, the run was released only after the
// child's group was stopped, and only the proxy's own clock cut its calls.
func TestRunBudgetCutBeforeTerm(t *testing.T) {
	if testing.Short() {
		t.Skip("runs hermesctl run")
	}
	hermesctl := hermesctlBin(t)
	dir := t.TempDir()
	socket := filepath.Join(dir, "run", "hermesd.sock")
	ln, err := control.Listen(socket, nil)
	if err != nil {
		t.Fatal(err)
	}
	order := filepath.Join(dir, "order")
	d := runsDaemon{&fakeDaemon{work: dir, calls: filepath.Join(dir, "calls"),
		script: fakeScript{Status: control.Status{Proxy: &control.Proxy{Listen: "127.0.0.1:1"}}}}, order}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- control.NewServer(d, control.Options{}).Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })

	run := exec.Command(hermesctl, "--socket", socket, "--state", filepath.Join(dir, "state"),
		"run", "--run-budget", "1", "--grace", "10s", "--",
		"sh", "-c", `trap 'echo term >> "$ORDER"; exit 0' TERM; while :; do sleep 0.05; done`)
	run.Env = append(os.Environ(), "ORDER="+order)
	var stderr strings.Builder
	run.Stderr = &stderr
	err = run.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitcode.HermesctlBudget {
		t.Fatalf("hermesctl run: %v, want exit status %d; stderr:\n%s", err, exitcode.HermesctlBudget, stderr.String())
	}
	b, err := os.ReadFile(order)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(strings.ReplaceAll(string(b), "end run-1", "end"))
	want := []string{"register", "end", "term", "release"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("events in order %q, want %q (the run ended before the TERM)", got, want)
	}
}
