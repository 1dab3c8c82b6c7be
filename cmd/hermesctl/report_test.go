package main

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/diag"
	"github.com/hermes-units/hermes/internal/exitcode"
)

// TestReport: an error prints its summary on the "hermesctl:" line and its
// detail indented below, whether hermesd split it (control.Error) or
// hermesctl did (diag.Error); an error with no detail is one line.
func TestReport(t *testing.T) {
	fromDaemon := &control.Error{Status: 409, Code: control.CodeConflict,
		Message: "unit web: needs cgroup mode; run hermesd with --supervisor-mode cgroup",
		Summary: "unit web: needs cgroup mode", Detail: "run hermesd with --supervisor-mode cgroup"}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"plain", errors.New("disk on fire"), "hermesctl: disk on fire\n"},
		{"daemon's", fmt.Errorf("start: %w", fromDaemon),
			"hermesctl: start: unit web: needs cgroup mode\n  run hermesd with --supervisor-mode cgroup\n"},
		{"daemon's, no detail", &control.Error{Code: control.CodeInternal, Message: "disk on fire", Summary: "disk on fire"},
			"hermesctl: disk on fire\n"},
		{"local", &diag.Error{Where: "pid file /p", What: "is a link", Fix: "remove it\nthen start again"},
			"hermesctl: pid file /p: is a link\n  remove it\n  then start again\n"},
		{"escaped", &diag.Error{What: "bad \x1b[2J name", Fix: "rename \x1b[2J"},
			"hermesctl: bad \\x1b[2J name\n  rename \\x1b[2J\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if code := report(tc.err, &b); code != exitcode.Failure {
				t.Errorf("got exit status %d, want %d", code, exitcode.Failure)
			}
			if b.String() != tc.want {
				t.Errorf("got\n%q\nwant\n%q", b.String(), tc.want)
			}
		})
	}
}
