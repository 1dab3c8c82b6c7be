package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// plant writes a module with the given files (path → content) into a
// temporary directory and returns its root.
func plant(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	files["go.mod"] = "module example.com/m\n\ngo 1.26\n"
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const spawnSetsid = `package run

import (
	"os/exec"
	"syscall"
)

func start() error {
	cmd := exec.Command("sleep", "1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd.Start()
}
`

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string // file:line of each finding
		what  string   // a word every finding's text must hold
	}{
		{
			name:  "SysProcAttr with Setsid outside the supervisor",
			files: map[string]string{"run/run.go": spawnSetsid},
			want:  []string{"run/run.go:10"},
			what:  "Setsid",
		},
		{
			name:  "valid marker on the line above",
			files: map[string]string{"run/run.go": strings.Replace(spawnSetsid, "\tcmd.SysProcAttr", "\t// detached-spawn: ok — the session leader hands its tty to the user\n\tcmd.SysProcAttr", 1)},
		},
		{
			name:  "valid marker on the line, with --",
			files: map[string]string{"run/run.go": strings.Replace(spawnSetsid, "{Setsid: true}", "{Setsid: true} // detached-spawn: ok -- survives by design, see SPEC §3", 1)},
		},
		{
			name:  "marker without a reason",
			files: map[string]string{"run/run.go": strings.Replace(spawnSetsid, "{Setsid: true}", "{Setsid: true} // detached-spawn: ok —", 1)},
			want:  []string{"run/run.go:10"},
			what:  "no reason",
		},
		{
			name:  "marker without a dash",
			files: map[string]string{"run/run.go": strings.Replace(spawnSetsid, "{Setsid: true}", "{Setsid: true} // detached-spawn: ok", 1)},
			want:  []string{"run/run.go:10"},
			what:  "no reason",
		},
		{
			name:  "marker two lines above does not count",
			files: map[string]string{"run/run.go": strings.Replace(spawnSetsid, "\tcmd := exec", "\t// detached-spawn: ok — too far away\n\tcmd := exec", 1)},
			want:  []string{"run/run.go:11"},
			what:  "Setsid",
		},
		{
			name: "call to unix.Setsid",
			files: map[string]string{"d/d.go": `package d

import "golang.org/x/sys/unix"

func detach() { _, _ = unix.Setsid() }
`},
			want: []string{"d/d.go:5"},
			what: "unix.Setsid",
		},
		{
			name: "renamed syscall import, Setpgid call",
			files: map[string]string{"d/d.go": `package d

import sc "syscall"

func detach() error { return sc.Setpgid(0, 0) }
`},
			want: []string{"d/d.go:5"},
			what: "sc.Setpgid",
		},
		{
			name: "assigned fields",
			files: map[string]string{"a/a.go": `package a

import (
	"os/exec"
	"syscall"
)

func start(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	cmd.SysProcAttr.Setpgid = true
	attr := cmd.SysProcAttr
	attr.Setctty = true
	attr.Foreground = false
}
`},
			want: []string{"a/a.go:10", "a/a.go:12"},
			what: "assigned",
		},
		{
			name: "multi-line literal with Noctty, Setctty and Foreground",
			files: map[string]string{"a/a.go": `package a

import "syscall"

var attr = &syscall.SysProcAttr{
	Setsid:     true,
	Noctty:     true,
	Setctty:    true,
	Foreground: true,
	Pdeathsig:  syscall.SIGKILL,
}
`},
			want: []string{"a/a.go:6", "a/a.go:8", "a/a.go:9"},
			what: "literal",
		},
		{
			name: "unix.SysProcAttr literal",
			files: map[string]string{"a/a.go": `package a

import "golang.org/x/sys/unix"

var attr = unix.SysProcAttr{Setpgid: true}
`},
			want: []string{"a/a.go:5"},
			what: "Setpgid",
		},
		{
			name: "the setsid program",
			files: map[string]string{"a/a.go": `package a

import (
	"context"
	"os/exec"
)

func start(ctx context.Context) *exec.Cmd { return exec.CommandContext(ctx, "/usr/bin/setsid", "x") }
`},
			want: []string{"a/a.go:8"},
			what: "setsid program",
		},
		{
			name: "harmless SysProcAttr",
			files: map[string]string{"a/a.go": `package a

import "syscall"

var attr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setsid: false}
`},
		},
		{
			name:  "the supervisor package is allowed",
			files: map[string]string{"supervisor/spawn.go": strings.Replace(spawnSetsid, "package run", "package supervisor", 1)},
		},
		{
			name:  "a package below the supervisor is not",
			files: map[string]string{"supervisor/helper/h.go": spawnSetsid},
			want:  []string{"supervisor/helper/h.go:10"},
			what:  "Setsid",
		},
		{
			name: "tests, testdata and hidden directories are skipped",
			files: map[string]string{
				"run/run_test.go":   strings.Replace(spawnSetsid, "package run", "package run_test", 1),
				"run/testdata/x.go": spawnSetsid,
				".cache/x.go":       spawnSetsid,
				"nested/go.mod":     "module example.com/nested\n",
				"nested/x.go":       spawnSetsid,
				"run/ok.go":         "package run\n",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			found, err := Check(plant(t, tc.files))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range found {
				got = append(got, f.File+":"+strconv.Itoa(f.Line))
				if !strings.Contains(f.What, tc.what) {
					t.Errorf("finding %q does not mention %q", f, tc.what)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v (%v)", got, tc.want, found)
			}
		})
	}
}

func TestCheckErrors(t *testing.T) {
	if _, err := Check(t.TempDir()); err == nil {
		t.Error("Check of a directory without go.mod succeeded, want an error")
	}
	root := plant(t, map[string]string{"a/a.go": "package a\nfunc {"})
	if _, err := Check(root); err == nil {
		t.Error("Check of a module with a syntax error succeeded, want an error")
	}
}
