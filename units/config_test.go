package units

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestLoadConfigMissingIsDefaults(t *testing.T) {
	c, err := LoadConfig(filepath.Join(t.TempDir(), "hermes.yaml"))
	if err != nil {
		t.Fatalf("LoadConfig(missing) = %v, want defaults", err)
	}
	if !reflect.DeepEqual(c, DefaultConfig()) || c.Gateway.Listen != "127.0.0.1:7411" || c.File != "" {
		t.Errorf("got %+v, want DefaultConfig()", c)
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hermes.yaml")
	content := `# yaml-language-server: $schema=../schema/config.schema.json
units: units
state: /var/lib/hermes
socket: ~/hermes.sock
role: worker
agent:
  run_budget_seconds: 1800
  local_stream_stale_timeout: 900
  stale_timeout_hard_cap: 5m
  stream_drain_timeout: 2
providers:
  local-reasoning:
    stale_timeout_seconds: 900
  openrouter:
    base_url: https://openrouter.ai/api/v1
    api_key_env: OPENROUTER_API_KEY
    models:
      openai/o3: {stale_timeout_seconds: 700}
    tiers:
      - {above_tokens: 10000, seconds: 600}
      - {above_tokens: 50000, seconds: 900}
    floors:
      - {slug: My-Model, seconds: 400}
gateway:
  listen: 127.0.0.1:9999
  allowed_origins: [http://localhost:3000, HTTPS://App.Example:8443]
  max_connections: 64
  max_request_body: 8MiB
  max_bodies_in_flight: 32MiB
  read_header_timeout: 5s
  body_read_timeout: 20
  idle_timeout: 1m
defaults:
  restart: always
  restart_sec: 2
  timeouts: {stop: 10s}
  stop_signal: INT
  log: {keep: 9}
`
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	def := BuiltinDefaults()
	def.Restart, def.RestartSec, def.Timeouts.Stop, def.StopSignal, def.Log.Keep = RestartAlways, 2*time.Second, 10*time.Second, 2, 9
	want := &Config{
		File:   path,
		Daemon: Daemon{Units: filepath.Join(dir, "units"), State: "/var/lib/hermes", Socket: filepath.Join(home, "hermes.sock"), Role: RoleWorker},
		Agent:  Agent{RunBudget: 1800 * time.Second, LocalStreamStaleTimeout: 900 * time.Second, StaleTimeoutHardCap: 5 * time.Minute, StreamDrainTimeout: 2 * time.Second},
		Providers: map[string]Provider{
			"local-reasoning": {ID: "local-reasoning", StaleTimeout: 900 * time.Second},
			"openrouter": {
				ID: "openrouter", BaseURL: "https://openrouter.ai/api/v1", APIKeyEnv: "OPENROUTER_API_KEY",
				Models: map[string]ProviderModel{"openai/o3": {StaleTimeout: 700 * time.Second}},
				Tiers:  []Tier{{10000, 600 * time.Second}, {50000, 900 * time.Second}},
				Floors: []Floor{{"my-model", 400 * time.Second}},
			},
		},
		Gateway: Gateway{
			Listen: "127.0.0.1:9999", AllowedOrigins: []string{"http://localhost:3000", "https://app.example:8443"},
			MaxConnections: 64, MaxRequestBody: 8 << 20, MaxBodiesInFlight: 32 << 20,
			ReadHeaderTimeout: 5 * time.Second, BodyReadTimeout: 20 * time.Second, IdleTimeout: time.Minute,
		},
		Defaults: def,
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got  %+v\nwant %+v", c, want)
	}
	// The config's defaults reach units loaded with them.
	s, err := (&Loader{Defaults: &c.Defaults}).Parse("/u/a.yaml", []byte("command: [a]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Restart != RestartAlways || s.Timeouts.Stop != 10*time.Second || s.Timeouts.Start != 90*time.Second {
		t.Errorf("unit from config defaults: restart %v stop %v start %v, want always, 10s, 90s", s.Restart, s.Timeouts.Stop, s.Timeouts.Start)
	}
}

func TestParseConfigRejects(t *testing.T) {
	tests := []rejection{
		{"unknown top key", "agnet: {}\n", 1, 1, `unknown key "agnet"; did you mean "agent"?`},
		{"unknown agent key", "agent:\n  run_budget: 5\n", 2, 3, `agent: unknown key "run_budget"; did you mean "run_budget_seconds"?`},
		{"negative budget", "agent:\n  run_budget_seconds: -5\n", 2, 23, "must not be negative"},
		{"zero hard cap", "agent:\n  stale_timeout_hard_cap: 0\n", 2, 27, "agent.stale_timeout_hard_cap: must be more than zero"},
		{"bad role", "role: boss\n", 1, 7, `unknown role "boss": want gateway or worker`},
		{"providers not a map", "providers: [a]\n", 1, 12, "providers: want a mapping"},
		{"provider unknown key", "providers:\n  x:\n    baseurl: http://h/\n", 3, 5, `providers.x: unknown key "baseurl"; did you mean "base_url"?`},
		{"provider id key", "providers:\n  x:\n    id: x\n", 3, 5, `providers.x: unknown key "id"`},
		{"provider zero timeout", "providers:\n  x:\n    stale_timeout_seconds: 0\n", 3, 28, "providers.x.stale_timeout_seconds: must be more than zero"},
		{"provider model negative", "providers:\n  x:\n    models:\n      m: {stale_timeout_seconds: -1}\n", 4, 34, "must not be negative"},
		{"tier missing seconds", "providers:\n  x:\n    tiers:\n      - {above_tokens: 5}\n", 4, 9, "providers.x.tiers[0]: each tier needs above_tokens: and seconds:"},
		{"floor missing seconds", "providers:\n  x:\n    floors:\n      - {slug: a}\n", 4, 9, "providers.x.floors[0]: each floor needs slug: and seconds:"},
		{"floors not a list", "providers:\n  x:\n    floors: {slug: a}\n", 3, 13, "providers.x.floors: want a list of {slug: NAME, seconds: S}"},
		{"floor not a mapping", "providers:\n  x:\n    floors: [a]\n", 3, 14, "providers.x.floors[0]"},
		{"floor empty slug", "providers:\n  x:\n    floors:\n      - {slug: '', seconds: 5}\n", 4, 16, "providers.x.floors[0].slug: must not be empty"},
		{"bad listen", "gateway:\n  listen: localhost\n", 2, 11, `gateway.listen: "localhost" is not host:port`},
		{"origin wildcard", "gateway:\n  allowed_origins: ['*']\n", 2, 20, `"*" would let every web page use your API keys`},
		{"origin with path", "gateway:\n  allowed_origins: [http://x/app]\n", 2, 20, `"http://x/app" is not an origin`},
		{"zero connections", "gateway:\n  max_connections: 0\n", 2, 20, "gateway.max_connections: 0 is out of range"},
		{"flight below body", "gateway:\n  max_request_body: 64MiB\n  max_bodies_in_flight: 1MiB\n", 3, 25, "gateway.max_bodies_in_flight (1048576 bytes) is below gateway.max_request_body"},
		{"zero idle", "gateway:\n  idle_timeout: 0\n", 2, 17, "gateway.idle_timeout: must be more than zero"},
		{"bad default restart", "defaults:\n  restart: sometimes\n", 2, 12, "unknown restart policy"},
		{"defaults log path", "defaults:\n  log: {path: /x}\n", 2, 9, `defaults.log: unknown key "path"`},
		{"defaults zero start", "defaults:\n  timeouts: {start: 0s}\n", 2, 21, "defaults.timeouts.start: must be more than zero"},
		{"empty", "", 1, 1, "empty file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig("/etc/hermes.yaml", "/etc", []byte(tt.content))
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("got %v, want Errors", err)
			}
			tt.check(t, es, "/etc/hermes.yaml")
		})
	}
}

// TestLoopbackHost: localhost (any case) and every loopback IP are
// loopback; the unspecified addresses, others, names and "" are not.
func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LocalHost": true, "127.0.0.1": true, "127.1.2.3": true, "::1": true,
		"0.0.0.0": false, "::": false, "10.1.2.3": false, "example.com": false, "localhost.example": false, "": false,
	} {
		if got := LoopbackHost(host); got != want {
			t.Errorf("LoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}

// TestCheckListen: a loopback address, or any with remote, may be
// listened on; another is an error wrapping the caller's sentinel that
// names the address and says the fix; what is not host:port says so.
func TestCheckListen(t *testing.T) {
	errNot := errors.New("not loopback")
	for _, tc := range []struct {
		addr   string
		remote bool
		want   string // "" for no error
	}{
		{"127.0.0.1:7411", false, ""},
		{"localhost:0", false, ""},
		{"0.0.0.0:7411", true, ""},
		{"0.0.0.0:7411", false, `not loopback: "0.0.0.0:7411"; set x.remote`},
		{"nonsense", true, `x.listen "nonsense" is not host:port: `},
	} {
		err := CheckListen("x.listen", tc.addr, tc.remote, errNot, "set x.remote")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckListen(%q, remote %v) = %v, want nil", tc.addr, tc.remote, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("CheckListen(%q, remote %v) = %v, want an error starting %q", tc.addr, tc.remote, err, tc.want)
		case strings.HasPrefix(tc.want, "not loopback") && !errors.Is(err, errNot):
			t.Errorf("CheckListen(%q): %v does not wrap the sentinel", tc.addr, err)
		}
	}
}

// TestListenTCP: a free address is bound; one already bound is an error
// naming who, the address and the key, wrapping the bind's error.
func TestListenTCP(t *testing.T) {
	ln, err := ListenTCP(context.Background(), "x", "x.listen", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	again, err := ListenTCP(context.Background(), "x", "x.listen", addr)
	if err == nil {
		again.Close()
		t.Fatalf("ListenTCP(%s) bound an address in use", addr)
	}
	want := "x: listen on " + addr + " (x.listen): "
	if !strings.HasPrefix(err.Error(), want) || !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("ListenTCP(%s) = %v, want an error starting %q wrapping EADDRINUSE", addr, err, want)
	}
}
