package supervisor

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
)

// TestLateScanSharesRunningScan: a group of a StopAll that looks empty at
// t needs a scan that began after t; one that runs when it asks, and began
// after t (the janitor's, on its leader's SIGCHLD), answers it: it waits
// for that scan's end, and no other scan reads the process table. The
// running scan is held after its view of the registrations until the
// group's ask waits for it.
func TestLateScanSharesRunningScan(t *testing.T) {
	var scans atomic.Int64
	viewed, resume := make(chan struct{}), make(chan struct{})
	var first sync.Once
	hooks := &ownerHooks{scanViewed: func() {
		scans.Add(1)
		first.Do(func() { close(viewed); <-resume })
	}}
	o, err := newOwner(Options{Mode: ModePGroup, Grace: testGrace}, launchShell, hooks)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	var resumed sync.Once
	t.Cleanup(func() { resumed.Do(func() { close(resume) }) })

	look := time.Now()
	running := make(chan struct{})
	go func() { o.scan(); close(running) }()
	testkit.Receive(t, hangBound, viewed, "no scan took its view of the registrations")
	late := &lateScans{o: o}
	answered := make(chan struct{})
	go func() { late.after(look); close(answered) }()
	// The ask waits for the running scan (for its lock) before that scan
	// is let go: else it would come after its end and share it anyway.
	testkit.Eventually(t, hangBound, "the group's ask to wait for the running scan", func() bool {
		buf := make([]byte, 1<<20)
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "(*lateScans).after") && strings.Contains(g, "sync.(*Mutex).Lock") {
				return true
			}
		}
		return false
	})
	resumed.Do(func() { close(resume) })
	testkit.Receive(t, hangBound, running, "the running scan did not end")
	testkit.Receive(t, hangBound, answered, "the group's ask was not answered")
	if n := scans.Load(); n != 1 {
		t.Errorf("%d scans read the process table, want 1: the running scan, which began after the group's look, answers it", n)
	}
}
