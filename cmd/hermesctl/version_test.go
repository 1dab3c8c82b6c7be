package main

import (
	"errors"
	"testing"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/exitcode"
)

// TestRunVersion calls version's run function without cobra: the client's
// build, then the daemon's; with no hermesd the client's alone and exit 1.
func TestRunVersion(t *testing.T) {
	daemon := control.VersionInfo{Version: "v1.2.3", Revision: "0123456789abcdef", Go: "go1.25.0"}
	for _, tc := range []struct {
		name     string
		daemon   bool
		json     bool
		out      string // a regexp of the whole output
		wantCode int
	}{
		{name: "no hermesd", out: `^hermesctl \S.*\n$`, wantCode: exitcode.Failure},
		{name: "with hermesd", daemon: true, out: `^hermesctl \S.*\nhermesd   v1\.2\.3 \(rev 0123456789ab, go1\.25\.0\)\n$`},
		{name: "-o json", daemon: true, json: true, out: `(?s)^\{\n  "client": \{.*\},\n  "daemon": \{\n    "version": "v1\.2\.3",\n    "revision": "0123456789abcdef",.*\}\n\}\n$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			socket := ""
			if tc.daemon {
				socket, _ = serveFake(t, fakeScript{Version: daemon})
			}
			o, out, _ := testClient(t, socket, tc.json)
			err := runVersion(t.Context(), &versionOptions{o})
			checkRun(t, err, tc.wantCode, "", out.Bytes(), tc.out)
			if tc.wantCode != 0 && !errors.Is(err, control.ErrNotRunning) {
				t.Errorf("got error %v, want one matching control.ErrNotRunning", err)
			}
		})
	}
}
