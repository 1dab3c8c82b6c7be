package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/spf13/cobra/doc"
)

// manDir holds the checked-in man pages of hermesctl, one per command.
const manDir = "../../docs/man"

// manDate is the date the pages carry: fixed, so that the pages change
// only when a command does.
var manDate = time.Date(2026, time.December, 1, 0, 0, 0, 0, time.UTC)

// TestManPages generates hermesctl's man pages from the command tree
// (cobra/doc) and checks that docs/man holds exactly them; with -update
// (make man) it writes them there.
func TestManPages(t *testing.T) {
	// Defaults that come from the environment (the home directory in
	// export launchd's --log-dir, the paths) must read the same on every
	// machine.
	for k, v := range map[string]string{
		"HOME": "/home/user", "XDG_CONFIG_HOME": "", "XDG_STATE_HOME": "", "XDG_RUNTIME_DIR": "/run/user/1000",
		"HERMES_CONFIG": "", "HERMES_UNITS": "", "HERMES_STATE": "", "HERMES_SOCKET": "",
	} {
		t.Setenv(k, v)
		if v == "" {
			os.Unsetenv(k) // t.Setenv restores it at the end
		}
	}
	gen := t.TempDir()
	root := newRoot()
	root.DisableAutoGenTag = true
	header := &doc.GenManHeader{Title: "HERMESCTL", Section: "1", Date: &manDate, Source: "hermes units", Manual: "hermes units manual"}
	if err := doc.GenManTree(root, header, gen); err != nil {
		t.Fatal(err)
	}
	if *updateExamples {
		if err := os.RemoveAll(manDir); err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(manDir, os.DirFS(gen)); err != nil {
			t.Fatal(err)
		}
		return
	}
	names := func(dir string) []string {
		ents, err := os.ReadDir(dir)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}
	got, want := names(gen), names(manDir)
	for _, n := range got {
		if !slices.Contains(want, n) {
			t.Errorf("docs/man lacks %s; run make man and commit docs/man", n)
			continue
		}
		a, _ := os.ReadFile(filepath.Join(gen, n))
		b, _ := os.ReadFile(filepath.Join(manDir, n))
		if !bytes.Equal(a, b) {
			t.Errorf("docs/man/%s is not what the command tree gives now; run make man and commit docs/man", n)
		}
	}
	for _, n := range want {
		if !slices.Contains(got, n) {
			t.Errorf("docs/man/%s is of no command now; run make man and commit docs/man", n)
		}
	}
}
