package main

import (
	"testing"

	"github.com/hermes-units/hermes/internal/exitcode"
)

// TestRunExplain calls timeouts explain's run function without cobra, for a
// provider given by --base-url (no config file, no units directory).
func TestRunExplain(t *testing.T) {
	t.Setenv("HERMES_STREAM_STALE_TIMEOUT", "")
	t.Setenv("HERMES_STREAM_STALE_GIVEUP", "")
	local := func(o *explainOptions) {
		o.provider, o.baseURL, o.model, o.api = "local", "http://127.0.0.1:8080/v1", "qwq", "chat"
	}
	for _, tc := range []struct {
		name     string
		set      func(*explainOptions)
		json     bool
		out      string // a regexp of the output
		err      string // a regexp of the error; "": none
		wantCode int
	}{
		{name: "local provider", set: local, out: `(?m)^provider local, model qwq, streaming chat call .*local endpoint \(127\.0\.0\.1 is loopback\)\n(.*\n)*socket read +1800s +yes +local endpoint ceiling 1800s$`},
		{name: "-o json", set: local, json: true, out: `(?s)^\{\n  .*"provider": "local",.*\n\}\n$`},
		{name: "--stream and --no-stream", set: func(o *explainOptions) { local(o); o.streamGiven, o.noStream = true, true },
			out: `^$`, err: `^--stream and --no-stream contradict each other: give one$`, wantCode: exitcode.Failure},
		{name: "--base-url without --provider", set: func(o *explainOptions) { local(o); o.provider = "" },
			out: `^$`, err: `^--base-url needs --provider ID`, wantCode: exitcode.Failure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, out, _ := testClient(t, "", tc.json)
			opts := &explainOptions{clientOptions: o}
			tc.set(opts)
			err := runExplain(opts)
			checkRun(t, err, tc.wantCode, tc.err, out.Bytes(), tc.out)
		})
	}
}
