package main

import (
	"strings"
	"testing"
)

// TestRunCompletion calls completion's run function without cobra's
// execution: each shell's script for hermesctl's command tree, and an
// error naming the shells for one it does not know.
func TestRunCompletion(t *testing.T) {
	for _, tc := range []struct {
		shell string
		want  string // the script's first line begins so; the error, for an unknown shell
	}{
		{"bash", "# bash completion V2 for hermesctl"},
		{"zsh", "#compdef hermesctl"},
		{"fish", "# fish completion for hermesctl"},
		{"tcsh", `completion: unknown shell "tcsh"; use one of bash, zsh, fish`},
	} {
		t.Run(tc.shell, func(t *testing.T) {
			o, out, _ := testClient(t, "", false)
			err := runCompletion(&completionOptions{clientOptions: o, shell: tc.shell, root: newRoot()})
			if tc.shell == "tcsh" {
				if err == nil || err.Error() != tc.want || out.Len() > 0 {
					t.Errorf("got %v and output %q, want error %q and no output", err, out.String(), tc.want)
				}
				return
			}
			first, _, _ := strings.Cut(out.String(), "\n")
			if err != nil || !strings.HasPrefix(first, tc.want) {
				t.Errorf("got %v and first line %q, want a script beginning %q", err, first, tc.want)
			}
		})
	}
}
