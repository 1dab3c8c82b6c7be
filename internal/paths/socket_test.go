package paths

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/spf13/pflag"
)

// TestDefaultSocketWithoutRuntimeDir: hermesd started where XDG_RUNTIME_DIR
// is unset (cron, su, a service manager without a session) and hermesctl in
// a login shell where it is set agree on the default socket: the user's
// runtime directory /run/user/UID, when it is private, is the same place
// either way.
func TestDefaultSocketWithoutRuntimeDir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, "st"))
	root := t.TempDir()
	old := userRuntimeRoot
	userRuntimeRoot = root
	t.Cleanup(func() { userRuntimeRoot = old })
	rt := filepath.Join(root, strconv.Itoa(os.Geteuid()))
	stateSock := filepath.Join(home, "st", "hermes", "hermesd.sock")

	tests := []struct {
		name string
		mode os.FileMode // of /run/user/UID; 0: absent
		env  string      // XDG_RUNTIME_DIR
		want string
	}{
		{"no runtime dir at all", 0, "", stateSock},
		{"private runtime dir, variable unset", 0o700, "", filepath.Join(rt, "hermes", "hermesd.sock")},
		{"private runtime dir, variable set to it", 0o700, rt, filepath.Join(rt, "hermes", "hermesd.sock")},
		{"runtime dir others may write", 0o777, "", stateSock},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.RemoveAll(rt)
			if tt.mode != 0 {
				if err := os.Mkdir(rt, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(rt, tt.mode); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("XDG_RUNTIME_DIR", tt.env)
			if got := Defaults().Socket; got != tt.want {
				t.Errorf("Defaults().Socket = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestFindSocket: a client with no socket given dials the candidate where a
// socket is, even when its own environment would default elsewhere.
func TestFindSocket(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, "st"))
	old := userRuntimeRoot
	userRuntimeRoot = t.TempDir() // no /run/user/UID
	t.Cleanup(func() { userRuntimeRoot = old })
	// hermesd ran without XDG_RUNTIME_DIR: its socket is in the state dir.
	t.Setenv("XDG_RUNTIME_DIR", "")
	sock := Defaults().Socket
	if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// hermesctl runs in a session that sets it.
	t.Setenv("XDG_RUNTIME_DIR", filepath.Join(home, "run"))
	def := Defaults().Socket
	if def == sock {
		t.Fatalf("the defaults agree already (%s): the test proves nothing", def)
	}
	if got := FindSocket(def); got != sock {
		t.Errorf("FindSocket(%s) = %s, want the listening %s", def, got, sock)
	}
	ln.Close()
	if got := FindSocket(def); got != def {
		t.Errorf("FindSocket with no socket anywhere = %s, want the default %s", got, def)
	}
}

// TestResolveSources: Resolve says which layer each path came from.
func TestResolveSources(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "cfg"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, "st"))
	for _, k := range []string{"HERMES_CONFIG", "HERMES_UNITS", "HERMES_STATE", "HERMES_SOCKET", "HERMES_ROLE"} {
		t.Setenv(k, "")
	}
	cfg := filepath.Join(home, "hermes.yaml")
	if err := os.WriteFile(cfg, []byte("units: u\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HERMES_STATE", filepath.Join(home, "s"))
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	AddFlags(fs)
	if err := fs.Parse([]string{"--config", cfg, "--socket", filepath.Join(home, "sock")}); err != nil {
		t.Fatal(err)
	}
	got, err := Resolve(fs)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Sources{Config: FromFlag, Units: FromFile, State: FromEnv, Socket: FromFlag}); got.From != want {
		t.Errorf("Resolve sources = %+v, want %+v", got.From, want)
	}
}
