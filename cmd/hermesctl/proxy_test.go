package main

import (
	"os"
	"testing"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/proxy"
)

// TestRunProxyEnv calls proxy env's run function without cobra: the
// address from hermesd's status, the token from its state directory.
func TestRunProxyEnv(t *testing.T) {
	state := t.TempDir()
	if err := proxy.SaveToken(state, "hermes-0123456789abcdef"); err != nil {
		t.Fatal(err)
	}
	on := control.Status{Daemon: control.Daemon{PID: 1, State: state}, Proxy: &control.Proxy{Listen: "127.0.0.1:7411"}}
	for _, tc := range []struct {
		name     string
		st       control.Status
		json     bool
		out      string // a regexp of the whole output
		err      string // a regexp of the error; "": none
		wantCode int
	}{
		{name: "shell", st: on, out: `^export OPENAI_BASE_URL='http://127\.0\.0\.1:7411/v1'\nexport OPENAI_API_KEY='hermes-0123456789abcdef'\n$`},
		{name: "-o json", st: on, json: true, out: `^\{\n  "OPENAI_API_KEY": "hermes-0123456789abcdef",\n  "OPENAI_BASE_URL": "http://127\.0\.0\.1:7411/v1"\n\}\n$`},
		{name: "proxy off", st: control.Status{Daemon: control.Daemon{PID: 1, State: state}}, out: `^$`, err: `^the provider proxy is off: `, wantCode: exitcode.Failure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			socket, _ := serveFake(t, fakeScript{Status: tc.st})
			o, out, _ := testClient(t, socket, tc.json)
			err := runProxyEnv(t.Context(), &proxyOptions{o})
			checkRun(t, err, tc.wantCode, tc.err, out.Bytes(), tc.out)
		})
	}
}

// TestRunRotateTokenOffline calls proxy rotate-token's run function
// without cobra and without hermesd: it replaces the token file itself,
// and says that the old token is no longer valid.
func TestRunRotateTokenOffline(t *testing.T) {
	o, out, _ := testClient(t, "", false)
	if err := os.MkdirAll(o.g.State, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := proxy.SaveToken(o.g.State, "hermes-old-0123456789abcdef"); err != nil {
		t.Fatal(err)
	}
	if err := runRotateToken(t.Context(), &proxyOptions{o}); err != nil {
		t.Fatalf("got error %v, want none", err)
	}
	want := "proxy token replaced in " + proxy.TokenPath(o.g.State) + " (hermesd is not running: the old one is no longer valid)\n"
	if out.String() != want {
		t.Errorf("got output %q, want %q", out.String(), want)
	}
	if tok, err := proxy.LoadToken(o.g.State, false); err != nil || tok == "hermes-old-0123456789abcdef" {
		t.Errorf("token after the rotation: %q, %v; want a new one", tok, err)
	}
}
