package paths

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/hermes-units/hermes/internal/testkit"
)

// freshHome points HOME at a new directory, with the XDG configuration
// and state directories cfg and st in it, no runtime directory, and no
// HERMES_* variable set; it returns that home.
func freshHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "cfg"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, "st"))
	t.Setenv("XDG_RUNTIME_DIR", "")
	for _, k := range []string{"HERMES_CONFIG", "HERMES_UNITS", "HERMES_STATE", "HERMES_SOCKET", "HERMES_ROLE"} {
		t.Setenv(k, "")
	}
	return home
}

func TestResolve(t *testing.T) {
	home := freshHome(t)
	cfgDir := testkit.WriteUnits(t, filepath.Join(home, "etc"), map[string]string{
		"hermes.yaml": "units: u\nstate: ~/fromfile\nrole: worker\nagent: {}\n",
		"broken.yaml": "units: [unclosed\n",
		// What else the file holds is checked where the whole
		// configuration is loaded; its daemon keys, through the same
		// decoder, count here.
		"elsewhere.yaml": "units: u\nbogus: 1\ngateway: {listen: 0.0.0.0:1}\n",
		"badrole.yaml":   "units: u\nrole: wokrer\n",
	})
	cfg := filepath.Join(cfgDir, "hermes.yaml")
	broken := filepath.Join(cfgDir, "broken.yaml")
	elsewhere := filepath.Join(cfgDir, "elsewhere.yaml")
	badRole := filepath.Join(cfgDir, "badrole.yaml")
	tests := []struct {
		name      string
		env       map[string]string
		args      []string
		want      Resolved
		wantError error
	}{
		{"defaults", nil, nil, Resolved{Paths: Paths{
			Config: filepath.Join(home, "cfg", "hermes", "hermes.yaml"), Units: filepath.Join(home, "cfg", "hermes", "units"),
			State: filepath.Join(home, "st", "hermes"), Socket: filepath.Join(home, "st", "hermes", "hermesd.sock")}}, nil},
		{"file", nil, []string{"--config", cfg}, Resolved{Paths: Paths{
			Config: cfg, Units: filepath.Join(cfgDir, "u"), State: filepath.Join(home, "fromfile"),
			Socket: filepath.Join(home, "st", "hermes", "hermesd.sock")}, Role: "worker"}, nil},
		{"env over file", map[string]string{"HERMES_CONFIG": cfg, "HERMES_STATE": "/env/state", "HERMES_ROLE": "gateway"}, nil, Resolved{Paths: Paths{
			Config: cfg, Units: filepath.Join(cfgDir, "u"), State: "/env/state",
			Socket: filepath.Join(home, "st", "hermes", "hermesd.sock")}, Role: "gateway"}, nil},
		{"flag over env", map[string]string{"HERMES_CONFIG": cfg, "HERMES_STATE": "/env/state"}, []string{"--state", "/flag/state", "--socket", "/flag/sock", "--role", "gateway"}, Resolved{Paths: Paths{
			Config: cfg, Units: filepath.Join(cfgDir, "u"), State: "/flag/state", Socket: "/flag/sock"}, Role: "gateway"}, nil},
		{"missing config is fine", nil, []string{"--config", filepath.Join(home, "nope.yaml")}, Resolved{Paths: Paths{
			Config: filepath.Join(home, "nope.yaml"), Units: filepath.Join(home, "cfg", "hermes", "units"),
			State: filepath.Join(home, "st", "hermes"), Socket: filepath.Join(home, "st", "hermes", "hermesd.sock")}}, nil},
		{"broken config", nil, []string{"--config", broken}, Resolved{Paths: Paths{
			Config: broken, Units: filepath.Join(home, "cfg", "hermes", "units"),
			State: filepath.Join(home, "st", "hermes"), Socket: filepath.Join(home, "st", "hermes", "hermesd.sock")}}, ErrConfig},
		{"errors elsewhere in the file", nil, []string{"--config", elsewhere}, Resolved{Paths: Paths{
			Config: elsewhere, Units: filepath.Join(cfgDir, "u"),
			State: filepath.Join(home, "st", "hermes"), Socket: filepath.Join(home, "st", "hermes", "hermesd.sock")}}, nil},
		{"a role the file gets wrong", nil, []string{"--config", badRole}, Resolved{Paths: Paths{
			Config: badRole, Units: filepath.Join(cfgDir, "u"),
			State: filepath.Join(home, "st", "hermes"), Socket: filepath.Join(home, "st", "hermes", "hermesd.sock")}}, ErrConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			AddFlags(fs)
			fs.String(KeyRole, "", "role")
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			got, err := Resolve(fs)
			if !errors.Is(err, tt.wantError) {
				t.Fatalf("Resolve error %v, want %v", err, tt.wantError)
			}
			if err != nil && tt.args != nil && !strings.Contains(err.Error(), tt.args[1]+":") {
				t.Errorf("Resolve error %q does not name the file (and where in it)", err)
			}
			if got.Paths != tt.want.Paths || got.Role != tt.want.Role {
				t.Errorf("Resolve = %+v,\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestResolveRelative: relative paths from flags and env are made absolute
// against the working directory at resolution, so that every path hermesd
// hands to a unit running elsewhere (HERMES_WRAPUP_FILE under --state,
// NOTIFY_SOCKET, logs) names the same file there.
func TestResolveRelative(t *testing.T) {
	freshHome(t)
	wd := t.TempDir()
	t.Chdir(wd)
	t.Setenv("HERMES_UNITS", "./u/../units")
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	AddFlags(fs)
	if err := fs.Parse([]string{"--state", "state", "--socket", "run/h.sock", "--config", "conf/hermes.yaml"}); err != nil {
		t.Fatal(err)
	}
	got, err := Resolve(fs)
	if err != nil {
		t.Fatal(err)
	}
	want := Paths{Config: filepath.Join(wd, "conf", "hermes.yaml"), Units: filepath.Join(wd, "units"),
		State: filepath.Join(wd, "state"), Socket: filepath.Join(wd, "run", "h.sock")}
	if got.Paths != want {
		t.Errorf("Resolve = %+v,\nwant %+v", got.Paths, want)
	}
}

// TestArgs: Args writes --config and --socket only when set, and the
// flags it writes, parsed as hermesd parses its own, resolve to the same
// paths.
func TestArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Paths
		want []string
	}{
		{"all", Paths{Config: "/c/hermes.yaml", Units: "/c/units", State: "/s", Socket: "/r/h.sock"},
			[]string{"--config", "/c/hermes.yaml", "--units", "/c/units", "--state", "/s", "--socket", "/r/h.sock"}},
		{"no config, no socket", Paths{Units: "/c/units", State: "/s"}, []string{"--units", "/c/units", "--state", "/s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.p.Args()
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Args = %q, want %q", got, tc.want)
			}
			freshHome(t)
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			AddFlags(fs)
			if err := fs.Parse(got); err != nil {
				t.Fatal(err)
			}
			r, err := Resolve(fs)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.p
			if want.Config == "" {
				want.Config = Defaults().Config
			}
			if want.Socket == "" {
				want.Socket = r.Socket // the default, which SocketCandidates picks
			}
			if r.Paths != want {
				t.Errorf("Resolve(Args) = %+v, want %+v", r.Paths, want)
			}
		})
	}
}
