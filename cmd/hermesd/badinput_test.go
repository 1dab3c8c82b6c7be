package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
)

// The daemon half of the bad-input catalogue (docs/bad-input.md; the unit
// file messages themselves are pinned by units.TestBadInputCatalogue). Each
// test runs hermesd as a real process.

// waitUnit polls hermesd's status (a unit's state changes with no event the
// test can wait on) until ok holds for unit, or fails after 60 s: a wait
// for a condition, as long as a machine loaded beyond two busy loops may
// need (a unit writing 32 MiB through its log took more than 15 s there).
func (d *hermesd) waitUnit(name string, what string, ok func(control.Unit) bool) control.Unit {
	d.t.Helper()
	var u control.Unit
	testkit.EventuallyOK(d.t, 60*time.Second, func() error {
		if u = d.status()[name]; ok(u) {
			return nil
		}
		return fmt.Errorf("%s: %s not reached; last status %+v%s", name, what, u, d.logTail())
	})
	return u
}

// logTail is hermesd's log, to end a failure with.
func (d *hermesd) logTail() string {
	b, _ := os.ReadFile(filepath.Join(d.dir, "hermesd.log"))
	return fmt.Sprintf("\nhermesd log:\n%s", b)
}

// TestBadLedgerAtStart: a ledger truncated mid-write, or a directory in its
// place, is kept aside as ledger.json.corrupt-<time> and hermesd starts its
// units.
func TestBadLedgerAtStart(t *testing.T) {
	needsProcesses(t, "hermesd processes")
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
	}{
		{"truncated mid-write", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte(`{"version": 1, "entries": [`+"\n"+`{"unit":"web","le`), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"a directory", func(t *testing.T, path string) {
			if err := os.MkdirAll(filepath.Join(path, "kept"), 0o700); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeUnits(t, dir, map[string]string{"web": "owned"})
			state := filepath.Join(dir, "state")
			if err := os.Mkdir(state, 0o700); err != nil {
				t.Fatal(err)
			}
			tt.setup(t, filepath.Join(state, "ledger.json"))
			d := startDaemon(t, dir, "gateway")
			d.waitUnit("web", "running", func(u control.Unit) bool { return u.State == "running" })
			if aside, _ := filepath.Glob(filepath.Join(state, "ledger.json.corrupt-*")); len(aside) != 1 {
				t.Errorf("kept aside: %v, want one ledger.json.corrupt-*", aside)
			}
		})
	}
}

// TestFullStateDir: on a state directory with no space left (a full tmpfs),
// a survivor (adoptable under a gateway: it must be recorded before it
// runs) does not start and status says why, naming the temporary ledger
// file once; once space is freed, the retry starts it. (An owned unit
// starts: it dies with hermesd whether or not its record is written, and
// the record is retried.)
func TestFullStateDir(t *testing.T) {
	needsProcesses(t, "hermesd processes")
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := testkit.MountTmpfs(t, state, 64<<10); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (needs root): %v; the full-disk case is untested here", err)
	}
	writeUnits(t, dir, map[string]string{"web": "adoptable"})
	var web proc.Identity // survives hermesd's clean stop: killed after it
	var webCgroup string
	t.Cleanup(func() {
		killSurvivor(t, web, webCgroup)
		if webCgroup == "" {
			return
		}
		// The cgroups of the attempts refused for want of space are left
		// behind by the supervisor (empty): remove them.
		prefix := strings.TrimRightFunc(webCgroup, func(r rune) bool { return r >= '0' && r <= '9' })
		left, _ := filepath.Glob(prefix + "*")
		for _, dir := range left {
			os.Remove(dir)
		}
	})
	filler := filepath.Join(state, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := f.Write(make([]byte, 4096)); err != nil {
			break
		}
	}
	f.Close()
	d := startDaemon(t, dir, "gateway")
	u := d.waitUnit("web", "the no-space error", func(u control.Unit) bool { return u.Error != "" })
	want := regexp.MustCompile(`^unit web: spawn web: record in ledger: ledger: write ` + regexp.QuoteMeta(state) +
		`/ledger\.json\.tmp-[0-9]+: no space left on device; restarting in [0-9.]+m?s$`)
	if !want.MatchString(u.Error) {
		t.Errorf("status error %q, want it to match %s", u.Error, want)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	u = d.waitUnit("web", "running once space is freed", func(u control.Unit) bool { return u.State == "running" })
	if id, err := proc.Read(u.PID); err == nil {
		web, webCgroup = id, u.Cgroup
	}
}

// runHermesd runs hermesd to its exit and returns the exit code and stderr.
func runHermesd(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), roleEnv+"=hermesd")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), withoutSweep(stderr.String())
}

// refusedStart runs hermesd over dir (units/, state/, ctl.sock) with the
// configuration file config, fails the test unless it exits with code,
// and returns its stderr.
func refusedStart(t *testing.T, dir, config string, code int) string {
	t.Helper()
	got, stderr := runHermesd(t, "--units", filepath.Join(dir, "units"), "--state", filepath.Join(dir, "state"),
		"--socket", filepath.Join(dir, "ctl.sock"), "--config", config)
	if got != code {
		t.Fatalf("hermesd: exit %d, want %d\n%s", got, code, stderr)
	}
	return stderr
}

// sweptLine is in the record the supervisor logs at start when it removed
// the empty cgroups that owners now gone left in the shared hierarchy
// (other hermesd processes, other tests' owners): a fact about the machine,
// not about the run, so runHermesd leaves it out of what it returns.
const sweptLine = `msg="supervisor: removed `

func withoutSweep(stderr string) string {
	lines := strings.SplitAfter(stderr, "\n")
	return strings.Join(slices.DeleteFunc(lines, func(l string) bool { return strings.HasPrefix(l, "time=") && strings.Contains(l, sweptLine) }), "")
}

// deadOwnerCgroup leaves, in the hierarchy where a hermesd started by this
// test makes its subtree, the empty subtree of an owner that is gone, as
// other owners' deaths leave on a shared machine: the hermesd sweeps it and
// says so on stderr. It does nothing where no writable cgroup v2 hierarchy
// is (pgroup mode: no sweep, no line).
func deadOwnerCgroup(t *testing.T) {
	t.Helper()
	mnt, own := proc.CgroupMount(), proc.Cgroup(os.Getpid())
	if mnt == "" || own == "" {
		return
	}
	if filepath.Base(own) == "manager" {
		own = filepath.Dir(own)
	}
	dir := filepath.Join(mnt, own, "hermes-999999999_1")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Logf("no dead owner's cgroup made (%v): the sweep's line is not provoked", err)
		return
	}
	t.Cleanup(func() { os.Remove(dir) })
}

// TestSocketPathNotSocket: a file (here a FIFO) at the control socket path is
// not removed: hermesd exits 4 and says what to do.
func TestSocketPathNotSocket(t *testing.T) {
	dir := t.TempDir()
	writeUnits(t, dir, map[string]string{})
	sock := filepath.Join(dir, "run", "hermesd.sock")
	if err := os.Mkdir(filepath.Dir(sock), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(sock, 0o600); err != nil {
		t.Fatal(err)
	}
	deadOwnerCgroup(t)
	code, stderr := runHermesd(t, "--units", filepath.Join(dir, "units"), "--state", filepath.Join(dir, "state"),
		"--socket", sock, "--config", filepath.Join(dir, "none.yaml"))
	want := "hermesd: " + sock + " exists and is not a socket; move it away or choose another --socket\n"
	if code != exitcode.HermesdSocket || stderr != want {
		t.Errorf("hermesd: exit %d, stderr %q; want exit %d, %q", code, stderr, exitcode.HermesdSocket, want)
	}
	if fi, err := os.Lstat(sock); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO at the socket path was touched: %v %v", fi, err)
	}
}

// TestSecondHermesdSocketDeleted: a deleted control socket is bound again
// by the hermesd that owns it (so hermesctl still reaches it), and the
// refusal of a second hermesd comes from the state directory's lock, not
// from the socket file: the second on the same paths exits 3 and leaves the
// first's socket alone.
func TestSecondHermesdSocketDeleted(t *testing.T) {
	first, dir := startEmpty(t)
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Add(filepath.Dir(first.socket)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(first.socket); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyOn(t, 20*time.Second, "the deleted control socket "+first.socket+" bound again by hermesd", w.Events, first.answers)
	code, stderr := runHermesd(t, "--units", filepath.Join(dir, "units"), "--state", filepath.Join(dir, "state"),
		"--socket", first.socket, "--config", filepath.Join(dir, "none.yaml"))
	lock := filepath.Join(dir, "state", "hermesd.lock")
	want := "hermesd: state directory is locked by another hermesd: " + lock + " is held by pid " +
		strconv.Itoa(first.cmd.Process.Pid) + "; stop that hermesd or pass another --state\n"
	if code != exitcode.HermesdLocked || stderr != want {
		t.Errorf("second hermesd: exit %d, stderr %q; want exit %d, %q", code, stderr, exitcode.HermesdLocked, want)
	}
	if !first.answers() {
		t.Errorf("the first hermesd is not reachable at %s after the second was refused", first.socket)
	}
}
