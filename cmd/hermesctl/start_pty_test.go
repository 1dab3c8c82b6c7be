package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hermes-units/hermes/internal/testkit"
)

// gatedUnit is a unit that is ready (its log says "ready") only once the
// file gate exists next to the units directory.
const gatedUnit = `shell: |
  echo "waiting for the gate"
  while [ ! -e ../gate ]; do sleep 0.05; done
  echo ready
  exec sleep 3600
ready: {log: "^ready$"}
restart: "no"
`

// TestStartProgressOnTerminal runs `hermesctl start` in a pseudo-terminal
// against a real hermesd: while the unit is not ready, one line shows the
// unit, its probe and the time elapsed, redrawn in place (\r, erase line;
// never a new line); once it is ready that line is erased and the
// outcome's line takes its place.
func TestStartProgressOnTerminal(t *testing.T) {
	hermesctl := hermesctlBin(t)
	dir := t.TempDir()
	units := testkit.WriteUnits(t, filepath.Join(dir, "units"), map[string]string{"web.yaml": gatedUnit})
	socket := filepath.Join(dir, "run", "hermesd.sock")
	if err := os.MkdirAll(filepath.Dir(socket), 0o700); err != nil {
		t.Fatal(err)
	}
	runHermesd(t, daemonPaths{units: units, state: filepath.Join(dir, "state"), socket: socket,
		log: filepath.Join(dir, "hermesd.log"), env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}})
	// TERM=screen: bubbletea's init (linked in for top) asks the terminal
	// for its background colour and waits 5 s for the answer, which a bare
	// pty never gives; it does not ask screen.
	env := append(os.Environ(), "TERM=screen-256color", "GORACE=atexit_sleep_ms=0")
	stop := exec.Command(hermesctl, "--socket", socket, "stop", "web")
	stop.Env = env
	if out, err := stop.CombinedOutput(); err != nil {
		t.Fatalf("stop web: %v\n%s", err, out)
	}

	cmd := exec.Command(hermesctl, "--socket", socket, "start", "web")
	cmd.Env = env
	term := runInPTY(t, cmd, 24, 120)
	scr := term.screen

	// Redrawn in place: the line has been drawn at 0.3 s and later, so
	// several times.
	scr.wait(t, 0, "the progress line, redrawn", regexp.MustCompile(`web: starting, probe log /\^ready\$/ · (0\.[3-9]|[1-9][0-9]*\.[0-9])s`))
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	scr.wait(t, 0, "the outcome", regexp.MustCompile(`started web \(ready: log /\^ready\$/, after [0-9.]+s\)`))
	testkit.Receive(t, daemonDeadline, term.exited, "start did not exit within %v of its outcome", daemonDeadline)
	if term.err != nil {
		t.Errorf("start: %v", term.err)
	}

	scr.mu.Lock()
	raw := scr.raw.String()
	scr.mu.Unlock()
	first := strings.Index(raw, "\r\x1b[Kweb: starting")
	outcome := strings.Index(raw, "started web")
	if first < 0 || outcome < first {
		t.Fatalf("no progress line before the outcome; the terminal got %q", raw)
	}
	progress := raw[first:outcome]
	if strings.Contains(progress, "\n") {
		t.Errorf("the progress took more than one line: %q", progress)
	}
	if n := strings.Count(progress, "\r\x1b[Kweb: starting"); n < 2 {
		t.Errorf("the progress line was drawn %d times, want it redrawn: %q", n, progress)
	}
	if !strings.HasSuffix(progress, "\r\x1b[K") {
		t.Errorf("the progress line was not erased before the outcome: %q", progress)
	}
}
