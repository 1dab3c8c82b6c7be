package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"

	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/internal/testkit"
)

// TestRunValidate calls validate's run function without cobra, on unit
// files of the test's: a valid directory, one with errors, and a unit
// file checked alone (no units directory).
func TestRunValidate(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("good/web.yaml", "command: [sleep, \"3600\"]\n")
	write("bad/db.yaml", "shell: sleep 3600\ncomand: [true]\n")
	for _, tc := range []struct {
		name     string
		paths    []string
		json     bool
		out      string // a regexp of the whole output
		errOut   string // likewise, of the error stream
		wantCode int
	}{
		{name: "valid", paths: []string{"good"}, out: `^ok: 1 unit\(s\) valid, no config file \(defaults\)\n$`, errOut: `^$`},
		{name: "errors", paths: []string{"bad"}, out: `^bad/db\.yaml:2:1: unknown key "comand"; did you mean "command"\?\n$`, errOut: `^$`, wantCode: exitcode.Failure},
		{name: "-o json", paths: []string{"bad"}, json: true, out: `(?s)^\{\n  "valid": false,\n  "errors": \[\n    \{\n      "file": "bad/db\.yaml",\n      "line": 2,.*\n\}\n$`, errOut: `^$`, wantCode: exitcode.Failure},
		{name: "a file alone", paths: []string{"good/web.yaml"}, out: `^ok: 1 unit\(s\) valid, no config file \(defaults\)\n$`,
			errOut: `^validate: no units directory .*: each file is checked alone, without the cross-unit rules \(--units names the directory\)\n$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(dir)
			o, out, errOut := testClient(t, "", tc.json)
			err := runValidate(t.Context(), &validateOptions{clientOptions: o, paths: tc.paths})
			checkRun(t, err, tc.wantCode, "", out.Bytes(), tc.out)
			if !regexp.MustCompile(tc.errOut).Match(errOut.Bytes()) {
				t.Errorf("got error stream %q, want %s", errOut.String(), tc.errOut)
			}
		})
	}
}

// identityUnits writes a units directory whose unit sets user:, group:
// and supplementary_groups:, readable by every user (the re-executed test
// runs as nobody), and returns it.
func identityUnits(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ud := filepath.Join(dir, "units")
	if err := os.Mkdir(ud, 0o755); err != nil {
		t.Fatal(err)
	}
	unit := "command: [sleep, \"3600\"]\nuser: nobody\ngroup: nogroup\nsupplementary_groups: [nogroup]\n"
	if err := os.WriteFile(filepath.Join(ud, "db.yaml"), []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(dir), dir, ud} { // t.TempDir's parent and itself are 0700
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return ud
}

// identityRefused is validate's error for the unit of identityUnits (the
// units package's words, at each key).
var identityRefused = regexp.MustCompile(`(?s)^\S*db\.yaml:2:1: user: needs hermesd to run as root, and it does not;.*db\.yaml:3:1: group: needs hermesd to run as root.*db\.yaml:4:1: supplementary_groups: needs hermesd to run as root`)

// TestValidateIdentityNeedsRoot: validate refuses user:, group: and
// supplementary_groups: when hermesd, taken to run as validate's user,
// would not be root, as hermesd refuses them at load; as root it accepts
// them. It accepted them under any uid.
func TestValidateIdentityNeedsRoot(t *testing.T) {
	ud := identityUnits(t)
	for _, tc := range []struct {
		name     string
		euid     int
		out      *regexp.Regexp
		wantCode int
	}{
		{"root", 0, regexp.MustCompile(`^ok: 1 unit\(s\) valid`), 0},
		{"not root", 1000, identityRefused, exitcode.Failure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, out, _ := testClient(t, "", false)
			err := runValidate(t.Context(), &validateOptions{clientOptions: o, paths: []string{ud}, euid: func() int { return tc.euid }})
			checkRun(t, err, tc.wantCode, "", out.Bytes(), tc.out.String())
		})
	}
}

// TestValidateAsNobody runs `hermesctl validate` (this test binary,
// dispatched by name as in the scripts) as the user nobody, without an
// injected uid: it reads its own effective uid and refuses the identity
// keys. It needs root to change its uid, and skips without.
func TestValidateAsNobody(t *testing.T) {
	nobody := testkit.Nobody(t, "to run a process as nobody; TestValidateIdentityNeedsRoot covers the rule with an injected uid")
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	ud := identityUnits(t)
	// A copy of the test binary that nobody may run: go test's own lies
	// in a directory only its user can enter.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(filepath.Dir(ud), "hermesctl")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "validate", "--config", filepath.Join(filepath.Dir(ud), "hermes.yaml"), ud)
	cmd.Args[0] = "hermesctl"
	cmd.Env = append(os.Environ(), "HOME="+filepath.Dir(ud))
	cmd.Dir = filepath.Dir(ud)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitcode.Failure {
		t.Fatalf("validate as nobody: %v, want exit status %d; output:\n%s", err, exitcode.Failure, out)
	}
	if !identityRefused.Match(out) {
		t.Errorf("validate as nobody said:\n%s\nwant it to match %s", out, identityRefused)
	}
}
