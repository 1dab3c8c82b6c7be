package main

import (
	"bytes"
	"context"
	"regexp"
	"testing"

	"github.com/hermes-units/hermes/control"
)

// TestRunUnits calls the run functions of start, stop, restart, enable and
// disable without cobra, against a fake hermesd, with buffers for streams.
func TestRunUnits(t *testing.T) {
	for _, tc := range []struct {
		name    string
		run     func(context.Context, unitsOptions) error
		json    bool
		out     string // a regexp of the whole output
		errOut  string // likewise, of the error stream
		wantErr string
	}{
		{name: "stop", run: action(control.ActionStop, false), out: `^stopped web\n$`},
		{name: "start, waited for", run: action(control.ActionStart, false),
			out: `^started web \(running, after \d+\.\ds\)\n$`, errOut: `^(web: .*\n)?$`},
		{name: "restart --no-block", run: action(control.ActionRestart, true), out: `^restarted web \(not waiting: --no-block\)\n$`},
		{name: "start -o json", run: action(control.ActionStart, false), json: true,
			out: `^\{"unit":"web","action":"start","reached":"running","waited_ns":\d+\}\n$`},
		{name: "disable", run: func(ctx context.Context, o unitsOptions) error {
			o.verb, o.done = "disable", "disabled"
			return o.eachCall(ctx, "", disable)
		}, out: `^disabled web\n$`},
		{name: "enable --no-start -o json", json: true, run: func(ctx context.Context, o unitsOptions) error {
			o.verb, o.done = "enable", "enabled"
			return runEnable(ctx, &enableOptions{unitsOptions: o, noStart: true})
		}, out: `^\{"unit":"web","action":"enable"\}\n$`},
		{name: "unknown unit", run: action(control.ActionStop, false), wantErr: "`hermesctl status` lists the units hermesd knows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			socket, _ := serveFake(t, fakeScript{Status: control.Status{Units: []control.Unit{
				{Name: "web", State: "running", PID: 4242, PGID: 4242, Ownership: "owned", Ready: true},
			}}})
			var out, errOut bytes.Buffer
			unit := "web"
			if tc.wantErr != "" {
				unit = "nosuch"
			}
			o := unitsOptions{clientOptions: clientOptions{g: &globals{}, streams: streams{out: &out, errOut: &errOut, json: tc.json}}, units: []string{unit}}
			o.g.Socket = socket
			err := tc.run(t.Context(), o)
			if tc.wantErr != "" {
				if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.wantErr)) {
					t.Fatalf("got error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if !regexp.MustCompile(tc.out).Match(out.Bytes()) {
				t.Errorf("got output %q, want %s", out.String(), tc.out)
			}
			if !regexp.MustCompile(tc.errOut).Match(errOut.Bytes()) {
				t.Errorf("got error stream %q, want %s", errOut.String(), tc.errOut)
			}
		})
	}
}

// action is runAction of a (--no-block when noBlock), with the verb and
// word newActionCmd gives it.
func action(a control.Action, noBlock bool) func(context.Context, unitsOptions) error {
	done := map[control.Action]string{control.ActionStart: "started", control.ActionStop: "stopped", control.ActionRestart: "restarted"}[a]
	return func(ctx context.Context, o unitsOptions) error {
		o.verb, o.done = string(a), done
		return runAction(ctx, &actionOptions{unitsOptions: o, action: a, noBlock: noBlock})
	}
}
