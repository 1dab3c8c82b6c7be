package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain registers this package's main as the "hermesctl" command of the
// script tests: testscript re-executes the test binary under that name.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"hermesctl": func() {
			os.Exit(report(newRoot().Execute(), os.Stderr))
		},
	})
}

// scriptCmds are the scripts' custom commands (testscript.Params.Cmds),
// filled from init functions of other _test files, one per feature.
var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){}

// TestScript runs every testdata/script/*.txtar. Each script gets a private
// HOME and XDG directories under its $WORK, so that the default paths of
// hermesctl (internal/paths) never reach the real user's files.
func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:  filepath.Join("testdata", "script"),
		Cmds: scriptCmds,
		Setup: func(env *testscript.Env) error {
			home := filepath.Join(env.WorkDir, "home")
			for _, d := range []string{home, filepath.Join(home, ".config"), filepath.Join(home, ".local", "state"), filepath.Join(env.WorkDir, "run")} {
				if err := os.MkdirAll(d, 0o700); err != nil {
					return err
				}
			}
			env.Setenv("HOME", home)
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
			env.Setenv("XDG_STATE_HOME", filepath.Join(home, ".local", "state"))
			env.Setenv("XDG_RUNTIME_DIR", filepath.Join(env.WorkDir, "run"))
			// Under -race every re-executed hermesctl would otherwise sleep
			// a second at exit waiting for late race reports.
			env.Setenv("GORACE", "atexit_sleep_ms=0")
			return nil
		},
	})
}
