package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
)

// TestStartErrors pins the errors of a unit that cannot start, as hermesctl
// status shows them (docs/bad-input.md, "At start of a unit"): "spawn" said
// once, a missing program named without the whole PATH and with where to
// fix it.
func TestStartErrors(t *testing.T) {
	needsProcesses(t, "hermesd processes")
	dir := t.TempDir()
	ud := filepath.Join(dir, "units")
	script := filepath.Join(dir, "script.sh")
	writeFile(t, script, "#!/bin/sh\n") // not executable
	missing := filepath.Join(dir, "missing-dir")
	tests := []struct{ name, yaml, want string }{
		{"nocmd", "command: [no-such-program, --serve]\n",
			`unit nocmd: spawn nocmd: "no-such-program" is not in PATH; install it, or write its absolute path in command: of ` + filepath.Join(ud, "nocmd.yaml")},
		{"noexec", "command: [" + script + "]\n",
			`unit noexec: spawn noexec: exec: "` + script + `": permission denied`},
		{"nowd", "command: [sleep, \"100\"]\nworkdir: " + missing + "\n",
			`unit nowd: spawn nowd: working directory: stat ` + missing + `: no such file or directory`},
	}
	files := map[string]string{}
	for _, tt := range tests {
		files[tt.name+".yaml"] = tt.yaml
	}
	testkit.WriteUnits(t, ud, files)
	d := startDaemon(t, dir, "gateway")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := d.waitUnit(tt.name, "a start error", func(u control.Unit) bool { return u.Error != "" })
			// The restart policy may add "; restarting in 1s".
			got, _, _ := strings.Cut(u.Error, "; restarting in ")
			if got != tt.want {
				t.Errorf("status error of %s:\n got %q\nwant %q", tt.name, got, tt.want)
			}
		})
	}
}
