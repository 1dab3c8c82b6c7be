package main

import (
	"path/filepath"
	"testing"

	"github.com/hermes-units/hermes/reconciler"
)

// TestRelativeFlagsMadeAbsolute: `hermesd --state state` (relative) used to
// hand a job HERMES_WRAPUP_FILE=state/runs/....wrapup, which the job,
// running in its own workdir, could not find; NOTIFY_SOCKET and log paths
// had the same flaw. Every path is made absolute once, at flag resolution,
// and the job's notice file is then absolute too.
func TestRelativeFlagsMadeAbsolute(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	for _, k := range []string{"HERMES_CONFIG", "HERMES_UNITS", "HERMES_STATE", "HERMES_SOCKET", "HERMES_ROLE"} {
		t.Setenv(k, "")
	}
	cfg, err := parseFlags([]string{"--state", "state", "--units", "units", "--socket", "ctl.sock", "--config", "hermes.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ name, got, want string }{
		{"state", cfg.State, filepath.Join(wd, "state")},
		{"units", cfg.Units, filepath.Join(wd, "units")},
		{"socket", cfg.Socket, filepath.Join(wd, "ctl.sock")},
		{"config", cfg.Config, filepath.Join(wd, "hermes.yaml")},
	} {
		if p.got != p.want {
			t.Errorf("--%s: got %q, want %q", p.name, p.got, p.want)
		}
	}
	if f := reconciler.WrapUpFile(cfg.State, "job-1"); !filepath.IsAbs(f) {
		t.Errorf("wrap-up file %q is relative, want absolute", f)
	}
}
