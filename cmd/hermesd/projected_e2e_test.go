package main

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/events"
	"github.com/hermes-units/hermes/internal/testkit"
)

// reloads follows the daemon's reload events from now on (no history):
// it returns once the stream is subscribed.
func (d *hermesd) reloads() <-chan events.Event {
	ch := make(chan events.Event, 64)
	opened := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	c := d.client()
	go func() {
		defer close(done)
		c.Events(ctx, control.EventOptions{Follow: true, NoHistory: true, Opened: func() { close(opened) }}, func(e events.Event) error {
			if e.Kind == events.Reload {
				ch <- e
			}
			return nil
		})
	}()
	d.t.Cleanup(func() { cancel(); <-done })
	testkit.Receive(d.t, reloadDeadline, opened, "the event stream did not open")
	return ch
}

// nextReload is the next reload event in words (eventWords), or fails.
func nextReload(t *testing.T, ch <-chan events.Event) string {
	t.Helper()
	select {
	case e := <-ch:
		return eventWords(e)
	case <-time.After(reloadDeadline):
		t.Fatalf("no reload within %v", reloadDeadline)
		return ""
	}
}

// TestProjectedUnits: a units directory that is a ConfigMap volume,
// updated the way the kubelet updates it (a new hidden version directory,
// ..data swapped; testkit.ProjectVolume). hermesd applies the update by
// itself, as one reload: the changed unit restarts, the other keeps its
// process, and none of the ..-entries is taken for a unit. The next update
// (a key added) is the next reload: none came between.
func TestProjectedUnits(t *testing.T) {
	needsProcesses(t, "hermesd processes")
	dir := t.TempDir()
	units := filepath.Join(dir, "units")
	testkit.ProjectVolume(t, units, "v1", map[string]string{"web.yaml": unitYAML(""), "api.yaml": unitYAML("")})
	d := startDaemonWith(t, dir, daemonOpts{role: "gateway"})
	running := func(names ...string) func(control.Status, map[string]control.Unit) bool {
		return func(_ control.Status, u map[string]control.Unit) bool {
			for _, n := range names {
				if u[n].State != control.StateRunning {
					return false
				}
			}
			return true
		}
	}
	before := d.waitStatus("web and api running", running("web", "api"))
	if len(before) != 2 {
		t.Fatalf("units %v, want web and api only (no ..data, no ..2026_*)", slices.Collect(maps.Keys(before)))
	}
	rl := d.reloads()

	testkit.ProjectVolume(t, units, "v2", map[string]string{"web.yaml": unitYAML(", V: two"), "api.yaml": unitYAML("")})
	if got, want := nextReload(t, rl), "reload applied start[] stop[] restart[web] keep[api]"; got != want {
		t.Errorf("the update's reload is %q, want %q", got, want)
	}
	after := d.waitStatus("web restarted", func(st control.Status, u map[string]control.Unit) bool {
		return running("web", "api")(st, u) && u["web"].PID != before["web"].PID
	})
	if after["api"].PID != before["api"].PID {
		t.Errorf("api pid %d → %d: an unchanged unit was restarted", before["api"].PID, after["api"].PID)
	}

	testkit.ProjectVolume(t, units, "v3", map[string]string{"web.yaml": unitYAML(", V: two"), "api.yaml": unitYAML(""), "db.yaml": unitYAML("")})
	// A late event of the v2 swap (the old version directory's removal)
	// may make one reload that changes nothing: passed over. Any reload
	// that changes something before the key added fails the test.
	got := nextReload(t, rl)
	if got == "reload applied start[] stop[] restart[] keep[api web]" {
		got = nextReload(t, rl)
	}
	if want := "reload applied start[db] stop[] restart[] keep[api web]"; got != want {
		t.Errorf("after the update, the next reload is %q, want the key added: %q", got, want)
	}
	d.waitStatus("db running", running("db"))
	if u := d.status(); len(u) != 3 {
		t.Errorf("units %v, want api, db, web", slices.Collect(maps.Keys(u)))
	}
}
