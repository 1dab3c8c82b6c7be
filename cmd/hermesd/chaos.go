//go:build chaos

package main

import (
	"os"
	"os/signal"
	"syscall"
)

// Fault injection for the chaos harness (tools/chaos), compiled only
// with the build tag chaos (go build -tags chaos): normal builds carry none
// of it and keep SIGUSR2's default action. In a chaos build, SIGUSR2 makes
// hermesd panic from a goroutine of its own, at the moment the harness
// chooses: an unrecovered panic ends the process at once, without running
// the deferred cleanups of serve (as a crash in any goroutine would), which
// is the fault the harness injects besides SIGKILL, SIGTERM and the OOM
// killer.
func init() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGUSR2)
	go func() { // lives as long as the process; ends it by panicking
		<-c
		panic("chaos: injected panic (SIGUSR2 in a chaos build)")
	}()
}
