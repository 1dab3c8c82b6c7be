package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"go.uber.org/goleak"
)

// TestMain registers this package's main as the "hermesctl" command of the
// script tests: testscript re-executes the test binary under that name.
// The tests' run is checked for leaked goroutines.
func TestMain(m *testing.M) {
	testscript.Main(leakChecked{m}, map[string]func(){
		"hermesctl": func() {
			os.Exit(report(execute(newRoot()), os.Stderr))
		},
	})
}

// leakChecked runs the tests, then fails the run if goroutines outlive
// them (goleak.VerifyTestMain, for a runner that exits by itself).
type leakChecked struct{ m *testing.M }

func (l leakChecked) Run() int {
	if code := l.m.Run(); code != 0 {
		return code
	}
	if err := goleak.Find(); err != nil {
		fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
		return 1
	}
	return 0
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
