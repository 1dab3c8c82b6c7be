package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-units/hermes/control"
)

// TestControlPaths: hermesd reports its own directories on the control
// socket (GET /v1/paths), absolute, for hermesctl to read the same ledger,
// logs and units with the socket alone.
func TestControlPaths(t *testing.T) {
	needsProcesses(t, "hermesd")
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "units"), 0o700); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, dir, "gateway")
	got, err := d.client().Paths(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := control.Paths{
		Config: filepath.Join(dir, "none.yaml"), Units: filepath.Join(dir, "units"),
		State: filepath.Join(dir, "state"), Socket: d.socket, Logs: filepath.Join(dir, "state", "logs"),
	}
	if got != want {
		t.Errorf("Paths = %+v,\nwant %+v", got, want)
	}
}
