package diag

import (
	"errors"
	"fmt"
	"testing"
)

var errUnsafe = errors.New("unsafe")

func TestSplit(t *testing.T) {
	fixable := &Error{Where: "unit web", What: "needs cgroup mode", Fix: "run hermesd with --supervisor-mode cgroup"}
	for _, tc := range []struct {
		name                  string
		err                   error
		text, summary, detail string
	}{
		{"plain", errors.New("disk on fire"), "disk on fire", "disk on fire", ""},
		{"fix", fixable,
			"unit web: needs cgroup mode; run hermesd with --supervisor-mode cgroup",
			"unit web: needs cgroup mode", "run hermesd with --supervisor-mode cgroup"},
		{"wrapped", fmt.Errorf("start: %w", fixable),
			"start: unit web: needs cgroup mode; run hermesd with --supervisor-mode cgroup",
			"start: unit web: needs cgroup mode", "run hermesd with --supervisor-mode cgroup"},
		{"kind, no where", &Error{Kind: errUnsafe, What: "/s is 0777", Fix: "chmod go-w /s"},
			"unsafe: /s is 0777; chmod go-w /s", "unsafe: /s is 0777", "chmod go-w /s"},
		{"no fix", &Error{Where: "pid file /p", What: "holds 90 bytes"},
			"pid file /p: holds 90 bytes", "pid file /p: holds 90 bytes", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.text {
				t.Errorf("text: got %q, want %q", got, tc.text)
			}
			s, d := Split(tc.err)
			if s != tc.summary || d != tc.detail {
				t.Errorf("Split: got %q, %q; want %q, %q", s, d, tc.summary, tc.detail)
			}
		})
	}
	if !errors.Is(&Error{Kind: errUnsafe, What: "x"}, errUnsafe) {
		t.Error("an Error does not match its Kind")
	}
}
