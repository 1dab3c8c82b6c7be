package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	scriptCmds["hermesd"] = cmdHermesd
	scriptCmds["waitfile"] = cmdWaitFile
	scriptCmds["exitcode"] = cmdExitCode
}

// daemonDeadline bounds what a test waits for of a real hermesd: its
// READY=1, its clean stop, a line in a unit's log. Generous: the machine
// may be loaded.
const daemonDeadline = 60 * time.Second

// The real hermesd, built from ../hermesd for the tests that need it
// (this test binary cannot be hermesd: that is package main of another
// command). One build serves every test running at the same time; the
// last user removes it, and a later one builds again (from the build
// cache: a link).
var hermesdBuild struct {
	mu    sync.Mutex
	users int    // guarded by mu
	dir   string // guarded by mu: the build's directory while users > 0
}

// acquireHermesd returns the path of a hermesd binary and the function
// that releases it.
func acquireHermesd() (string, func(), error) {
	b := &hermesdBuild
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.users == 0 {
		dir, err := os.MkdirTemp("", "hermesctl-test-hermesd")
		if err != nil {
			return "", nil, err
		}
		out, err := exec.Command("go", "build", "-o", dir, "github.com/hermes-units/hermes/cmd/hermesd").CombinedOutput()
		if err != nil {
			os.RemoveAll(dir)
			return "", nil, fmt.Errorf("go build hermesd: %v\n%s", err, out)
		}
		b.dir = dir
	}
	b.users++
	var once sync.Once
	return filepath.Join(b.dir, "hermesd"), func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			if b.users--; b.users == 0 {
				os.RemoveAll(b.dir)
				b.dir = ""
			}
		})
	}, nil
}

// daemonProc is a running hermesd.
type daemonProc struct {
	*testkit.Daemon
	release func() // of the hermesd binary (acquireHermesd), once hermesd has stopped
	log     string
}

// daemonPaths are where a test's hermesd keeps its units, state and
// socket, and writes its own log.
type daemonPaths struct {
	units, state, socket, log string
	config                    string   // its hermes.yaml; "": none (the defaults)
	env                       []string // the daemon's environment (its units inherit it)
}

// startHermesd starts hermesd on p and returns once it has sent READY=1
// (every unit has had its first chance to start), or with why not.
// The caller stops it (stop) whatever happens next.
func startHermesd(p daemonPaths) (*daemonProc, error) {
	bin, rel, err := acquireHermesd()
	if err != nil {
		return nil, err
	}
	// Unit files and their directory must not be writable by others.
	if err := os.Chmod(p.units, 0o700); err != nil {
		rel()
		return nil, err
	}
	logf, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		rel()
		return nil, err
	}
	defer logf.Close()
	config := p.config
	if config == "" {
		config = filepath.Join(filepath.Dir(p.units), "no-hermes.yaml")
	}
	cmd := exec.Command(bin, "--units", p.units, "--state", p.state, "--socket", p.socket, "--config", config)
	cmd.Env = slices.Clip(p.env)
	cmd.Dir = filepath.Dir(p.units) // as an operator runs it: from the directory that holds the units
	cmd.Stdout, cmd.Stderr = logf, logf
	td, err := testkit.StartReady(context.Background(), cmd, daemonDeadline, p.log)
	if td == nil {
		rel()
		return nil, err
	}
	return &daemonProc{Daemon: td, release: rel, log: p.log}, err
}

// runHermesd starts hermesd on p for t (startHermesd), failing t when it
// does not start, and returns a client of its control socket. The client
// is closed and hermesd stopped when t ends; a failed stop fails t.
func runHermesd(t *testing.T, p daemonPaths) *control.Client {
	t.Helper()
	d, err := startHermesd(p)
	if d != nil {
		t.Cleanup(func() {
			if err := d.stop(); err != nil {
				t.Errorf("hermesd stop: %v", err)
			}
		})
	}
	var c *control.Client
	if err == nil {
		c, err = control.Dial(p.socket)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// stop stops hermesd cleanly (TERM: it stops its owned units first) and
// waits for it; KILL after daemonDeadline.
func (d *daemonProc) stop() error {
	defer d.release()
	return d.Stop(daemonDeadline)
}

// cmdHermesd is the script command `hermesd`: it runs the real hermesd on
// the units of $WORK/units, its state in $WORK/state, its control socket
// where hermesctl looks ($HERMES_SOCKET, else the XDG default), its own
// log in $WORK/hermesd.log, and returns once hermesd has sent READY=1.
// hermesd is stopped (TERM, waited for) when the script ends.
func cmdHermesd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: hermesd")
	}
	socket := ts.Getenv("HERMES_SOCKET")
	if socket == "" {
		socket = filepath.Join(ts.Getenv("XDG_RUNTIME_DIR"), "hermes", "hermesd.sock")
	}
	var env []string
	for _, k := range []string{"PATH", "HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "TMPDIR"} {
		if v := ts.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	ts.Check(os.MkdirAll(ts.MkAbs("units"), 0o700))
	d, err := startHermesd(daemonPaths{units: ts.MkAbs("units"), state: ts.MkAbs("state"), socket: socket, log: ts.MkAbs("hermesd.log"), env: env})
	if d != nil {
		ts.Defer(func() {
			if err := d.stop(); err != nil {
				b, _ := os.ReadFile(d.log)
				ts.Logf("hermesd: %v\n%s", err, b)
			}
		})
	}
	ts.Check(err)
}

// cmdWaitFile is the script command `waitfile FILE REGEXP`: it waits
// until a line of FILE (a unit's log, a command's stderr) matches
// REGEXP, reading FILE again at each change of its directory, for up to
// daemonDeadline.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitfile FILE REGEXP")
	}
	re, err := regexp.Compile("(?m)" + args[1])
	ts.Check(err)
	ts.Check(testkit.WaitFile(ts.MkAbs(args[0]), re, daemonDeadline))
}

// cmdExitCode is the script command `exitcode N PROG [ARGS...]`: it runs
// PROG as exec does (its stdout and stderr are then the script's) and
// fails unless it exits with status N.
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}
