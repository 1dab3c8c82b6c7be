// Package launchd holds the launchd agent that runs hermesd on macOS,
// written by hermesctl export launchd (make examples; the command's
// TestLaunchdExampleIsGenerated fails when the two drift). Its test reads
// the file with a property list parser and checks the keys an installer
// relies on.
package launchd

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"howett.net/plist"
)

const file = "org.hermes-units.hermesd.plist"

func TestHermesdPlist(t *testing.T) {
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var a struct {
		Label                string            `plist:"Label"`
		ProgramArguments     []string          `plist:"ProgramArguments"`
		EnvironmentVariables map[string]string `plist:"EnvironmentVariables"`
		RunAtLoad            bool              `plist:"RunAtLoad"`
		KeepAlive            map[string]bool   `plist:"KeepAlive"`
		AbandonProcessGroup  bool              `plist:"AbandonProcessGroup"`
		StandardOutPath      string            `plist:"StandardOutPath"`
		StandardErrorPath    string            `plist:"StandardErrorPath"`
	}
	format, err := plist.Unmarshal(doc, &a)
	if err != nil || format != plist.XMLFormat {
		t.Fatalf("plist.Unmarshal = format %d, %v; want an XML property list", format, err)
	}
	if want := strings.TrimSuffix(file, ".plist"); a.Label != want {
		t.Errorf("Label = %q, want %q (the file name without .plist)", a.Label, want)
	}
	argv := a.ProgramArguments
	if len(argv) == 0 || !filepath.IsAbs(argv[0]) || filepath.Base(argv[0]) != "hermesd" ||
		!slices.Contains(argv, "--units") || !slices.Contains(argv, "--state") {
		t.Errorf("ProgramArguments = %q, want /…/hermesd --units DIR --state DIR", argv)
	}
	if ok, set := a.KeepAlive["SuccessfulExit"]; !set || ok {
		t.Errorf("KeepAlive = %v, want {SuccessfulExit: false} (restart on a crash only)", a.KeepAlive)
	}
	if !a.RunAtLoad || !a.AbandonProcessGroup {
		t.Errorf("RunAtLoad = %v, AbandonProcessGroup = %v; want both true", a.RunAtLoad, a.AbandonProcessGroup)
	}
	for key, p := range map[string]string{"StandardOutPath": a.StandardOutPath, "StandardErrorPath": a.StandardErrorPath} {
		if !filepath.IsAbs(p) {
			t.Errorf("%s = %q, want an absolute path (launchd does not expand ~)", key, p)
		}
	}
	if a.EnvironmentVariables["PATH"] == "" {
		t.Error("EnvironmentVariables has no PATH: units would find their programs in launchd's /usr/bin:/bin:/usr/sbin:/sbin only")
	}
}
