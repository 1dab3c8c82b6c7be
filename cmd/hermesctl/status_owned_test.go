package main

import (
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/units"
)

// TestStatusOwned: status lists the groups hermesd keeps for control
// owners, each with its owner, ownership, state and reason.
func TestStatusOwned(t *testing.T) {
	st := control.Status{Owned: []control.OwnedGroup{
		{Name: "mcp", PGID: 4242, PID: 4242, Owner: 4000, Ownership: units.Owned, State: "kept"},
		{Name: "build", PGID: 4343, PID: 4343, Owner: 4000, Ownership: units.PersistOnRelease, Reason: "a release build must finish", State: "persisting"},
	}}
	var b strings.Builder
	writeStatus(&b, st, look{now: time.Now()})
	out := b.String()
	want := "groups kept for their owners (owned ones die with the owner, and with hermesd):\n" +
		"  NAME   PGID  OWNER     OWNERSHIP           STATE       REASON\n" +
		"  mcp    4242  pid 4000  owned               kept        -\n" +
		"  build  4343  pid 4000  persist_on_release  persisting  a release build must finish\n"
	if !strings.Contains(out, want) {
		t.Errorf("status:\n%s\nwant it to hold:\n%s", out, want)
	}
}
