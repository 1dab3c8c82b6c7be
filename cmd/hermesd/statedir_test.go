package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/internal/testkit"
)

// TestStateDirNotOurs: hermesd refuses, exit 2 and the fix in the
// message, a state directory (or an entry in it) that another user owns
// or may write, or an entry that is a link, as sshd's StrictModes does;
// nothing is written through it.
func TestStateDirNotOurs(t *testing.T) {
	const other = 65534
	tests := []struct {
		name  string
		root  bool                                    // giving a file to another user needs root
		plant func(t *testing.T, state string) string // returns the path the error names
		want  string                                  // after that path
	}{
		{"state dir of another user", true, func(t *testing.T, state string) string {
			mustDo(t, os.Chown(state, other, other))
			return state
		}, " belongs to uid 65534, not to uid 0 that runs hermesd: that user could read what hermesd keeps there, or swap it for a link; fix it with: chown -R 0 "},
		{"state dir writable by others", false, func(t *testing.T, state string) string {
			mustDo(t, os.Chmod(state, 0o777))
			return state
		}, " has mode 0777: other users can write it, and could swap what hermesd keeps there for a link; fix it with: chmod go-w "},
		{"logs a link to another user's directory", false, func(t *testing.T, state string) string {
			target := t.TempDir()
			if os.Geteuid() == 0 {
				mustDo(t, os.Chown(target, other, other))
			}
			mustDo(t, os.Symlink(target, filepath.Join(state, "logs")))
			t.Cleanup(func() {
				if es, _ := os.ReadDir(target); len(es) != 0 {
					t.Errorf("hermesd wrote %s through the link into %s", es[0].Name(), target)
				}
			})
			return filepath.Join(state, "logs")
		}, " is a symbolic link: hermesd never writes its state through a link; remove it (rm "},
		{"proxy.token of another user", true, func(t *testing.T, state string) string {
			tok := filepath.Join(state, "proxy.token")
			mustDo(t, os.WriteFile(tok, []byte("x\n"), 0o600))
			mustDo(t, os.Chown(tok, other, other))
			return tok
		}, " belongs to uid 65534, not to uid 0 that runs hermesd"},
		{"logs writable by others", false, func(t *testing.T, state string) string {
			logs := filepath.Join(state, "logs")
			mustDo(t, os.Mkdir(logs, 0o700))
			mustDo(t, os.Chmod(logs, 0o733))
			return logs
		}, " has mode 0733: other users can write it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.root && os.Geteuid() != 0 {
				t.Skip("giving a file to another user needs root")
			}
			dir := t.TempDir()
			state := filepath.Join(dir, "state")
			mustDo(t, os.Mkdir(state, 0o700))
			path := tt.plant(t, state)
			code, stderr := runBounded(t, "--units", filepath.Join(dir, "units"), "--state", state,
				"--socket", filepath.Join(privateDir(t), "h.sock"), "--config", filepath.Join(dir, "none.yaml"))
			want := "hermesd: state directory not safe: " + path + tt.want
			if code != exitcode.Usage || !strings.HasPrefix(stderr, want) {
				t.Errorf("got exit %d, stderr %q; want exit %d and a line beginning %q", code, stderr, exitcode.Usage, want)
			}
			if _, err := os.Lstat(filepath.Join(state, "hermesd.lock")); err == nil {
				t.Errorf("hermesd made its lock in a state directory it refused")
			}
		})
	}
}

// TestStateDirRemoved: a state directory removed while hermesd runs (and
// made again by the next one) never lets a second hermesd in on the same
// --state: it is refused, exit 3, naming the first one's pid, and the
// first one's unit is not started twice.
func TestStateDirRemoved(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the state directory's name is held by an abstract Unix socket, which only Linux has")
	}
	first, dir := startEmpty(t)
	state := filepath.Join(dir, "state")
	// hermesd may write in it meanwhile (a log, its control socket bound
	// again): rm -rf until one pass finds nothing left.
	testkit.EventuallyOK(t, 20*time.Second, func() error { return os.RemoveAll(state) })
	code, got := runBounded(t, "--units", filepath.Join(dir, "units"), "--state", state,
		"--socket", filepath.Join(privateDir(t), "second.sock"), "--config", filepath.Join(dir, "none.yaml"))
	want := "hermesd: state directory is locked by another hermesd: " + state + " is held by pid " +
		strconv.Itoa(first.cmd.Process.Pid) + ", which still runs its units though its hermesd.lock was removed"
	if code != exitcode.HermesdLocked || !strings.HasPrefix(got, want) {
		t.Errorf("second hermesd: exit %d, stderr %q; want exit %d and a line beginning %q", code, got, exitcode.HermesdLocked, want)
	}
}

// runBounded is runHermesd for a hermesd that should refuse to start: one
// still running after 20 s fails the test (and is killed).
func runBounded(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), roleEnv+"=hermesd")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("hermesd %q ran for 20 s instead of refusing to start; stderr:\n%s", args, stderr.String())
	}
	return cmd.ProcessState.ExitCode(), withoutSweep(stderr.String())
}

// privateDir is a fresh directory of mode 0700, for a control socket.
func privateDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	mustDo(t, os.Chmod(d, 0o700))
	return d
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
