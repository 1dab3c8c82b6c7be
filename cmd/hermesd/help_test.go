package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestHelp: hermesd --help (and -h) says what hermesd is, lists its flags
// with "-h, --help" (no "[=true|false]" after boolean flags), goes to
// stdout and exits 0.
func TestHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		t.Run(arg, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], arg)
			cmd.Env = append(os.Environ(), roleEnv+"=hermesd")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("hermesd %s: %v; stderr: %s", arg, err, stderr.String())
			}
			got := string(out)
			for _, want := range []string{"hermesd is the hermes units daemon", "Usage:\n  hermesd [flags]", "-h, --help", "--insecure-units  "} {
				if !strings.Contains(got, want) {
					t.Errorf("hermesd %s lacks %q; it printed:\n%s", arg, want, got)
				}
			}
			if strings.Contains(got, "[=") {
				t.Errorf("hermesd %s shows [=…] after a flag:\n%s", arg, got)
			}
		})
	}
}
